"""What a node practises on: its nominal tasks, its weak stratum and perturbed tasks from the
robustness suite's training ranges, for the node and every node it keeps (the practised policy
must still do every skill)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from robo_coevolve.evaluation.perturbations import FAMILIES, training_tasks
from robo_coevolve.practice.config import PracticeConfig
from robo_coevolve.skill_tree import SkillNode
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec

WEAK_FRACTION = 0.2  # the weak stratum: the lightest fifth of a node's egg masses
# Every family but "wrong skill": its tasks reward *not* doing the scored skill, which the
# scorer's progress does not express.
PRACTISED_FAMILIES = tuple(f for f in FAMILIES if f.name != "wrong skill")


def weak_stratum(tasks: TaskDistribution) -> TaskDistribution:
    """``tasks`` restricted to the lightest fifth of their egg masses (the lightest eggs slide
    and bounce most: where a clone fails first)."""
    r = tasks.egg_mass_range
    low, high = 1.0 - r, 1.0 - r + 2.0 * r * WEAK_FRACTION
    centre = 0.5 * (low + high)
    base = dataclasses.replace(tasks.base, egg_mass=tasks.base.egg_mass * centre)
    return dataclasses.replace(tasks, base=base, egg_mass_range=(high - centre) / centre)


def practice_tasks(
    nodes: Sequence[SkillNode], config: PracticeConfig, rng: np.random.Generator, language: bool = True
) -> list[TaskSpec]:
    """``config.episodes`` tasks for each of ``nodes`` (the node practised, then those it keeps),
    each node's split into weak, perturbed (``evaluation.perturbations.training_tasks``;
    the instruction families only for a policy with ``language``) and nominal ones by the
    config's shares, shuffled so that every update sees every kind."""
    tasks: list[TaskSpec] = []
    n = config.episodes
    for node in nodes:
        weak = round(config.weak_share * n)
        perturbed = min(round(config.perturbed_share * n), n - weak)
        distribution = node.distribution()
        tasks += weak_stratum(distribution).sample_many(rng, weak)
        if perturbed:
            tasks += training_tasks(distribution, rng, perturbed, language, PRACTISED_FAMILIES)
        tasks += distribution.sample_many(rng, n - weak - perturbed)
    return [tasks[i] for i in rng.permutation(len(tasks))]
