"""What a node practises on: its nominal tasks, its weak stratum and perturbed tasks, for the node
and every node it keeps (the practised policy must still do every skill)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from robo_coevolve.practice.config import PracticeConfig
from robo_coevolve.skill_tree import SkillNode
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec

WEAK_FRACTION = 0.2  # the weak stratum: the lightest fifth of a node's egg masses


def weak_stratum(tasks: TaskDistribution) -> TaskDistribution:
    """``tasks`` restricted to the lightest fifth of their egg masses (the lightest eggs slide
    and bounce most: where a clone fails first)."""
    r = tasks.egg_mass_range
    low, high = 1.0 - r, 1.0 - r + 2.0 * r * WEAK_FRACTION
    centre = 0.5 * (low + high)
    base = dataclasses.replace(tasks.base, egg_mass=tasks.base.egg_mass * centre)
    return dataclasses.replace(tasks, base=base, egg_mass_range=(high - centre) / centre)


def perturbed_training_tasks(
    tasks: TaskDistribution, n: int, config: PracticeConfig, rng: np.random.Generator
) -> list[TaskSpec]:
    """``n`` perturbed training tasks around ``tasks``: for now a push on the egg of
    ``config.push_force`` N. The robustness suite's training split of perturbation families
    plugs in here."""
    drawn = tasks.sample_many(rng, n)
    forces = rng.uniform(*config.push_force, size=n)
    return [t.replace(disturbance_force=float(f)) for t, f in zip(drawn, forces, strict=True)]


def practice_tasks(
    nodes: Sequence[SkillNode], config: PracticeConfig, rng: np.random.Generator
) -> list[TaskSpec]:
    """``config.episodes`` tasks shared evenly by ``nodes`` (the node practised, then those it
    keeps), each node's split into weak, perturbed and nominal ones by the config's shares,
    shuffled so that every update sees every kind."""
    tasks: list[TaskSpec] = []
    for i, node in enumerate(nodes):
        n = config.episodes // len(nodes) + (i < config.episodes % len(nodes))
        weak = round(config.weak_share * n)
        pushed = min(round(config.push_share * n), n - weak)
        distribution = node.distribution()
        tasks += weak_stratum(distribution).sample_many(rng, weak)
        tasks += perturbed_training_tasks(distribution, pushed, config, rng)
        tasks += distribution.sample_many(rng, n - weak - pushed)
    return [tasks[i] for i in rng.permutation(len(tasks))]
