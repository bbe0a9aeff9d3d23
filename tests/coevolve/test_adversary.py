"""The adversary finds what a policy fails, and only validated, solvable tasks count."""

from __future__ import annotations

import numpy as np
import pytest

from robo_coevolve.action_space import command_as_action
from robo_coevolve.coevolve import TaskAdversary, TaskPool, TaskSpace, TaskSynthesizer
from robo_coevolve.task_distribution import TaskDistribution


class HoldStill:
    """A policy that keeps the spatula where it is: it fails every scoop."""

    privileged = True
    image_size = None

    def reset(self, batch: int) -> None:
        pass

    def act(self, obs: dict) -> np.ndarray:
        return command_as_action(obs["proprio"])


def test_the_adversary_offers_failed_tasks_that_enter_only_when_solvable(backend, scoop_modes):
    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    space = TaskSpace()
    adversary = TaskAdversary(population=6, episodes=1, proposals=2)
    attack = adversary.search(HoldStill(), pool, space, backend, np.random.default_rng(0))
    assert attack.mean_failure == 1.0 and len(attack.candidates) == 2
    assert attack.episodes == attack.tried <= 6

    synth = TaskSynthesizer(space, rare_proposals=0, proposals_per_weak=0, solve_trials=8)
    useless = [np.zeros(15)]
    report, _ = synth.evolve(pool, useless, backend, np.random.default_rng(0), 2, attack.candidates)
    assert report.admitted == 0 and len(pool) == 1  # not solvable by the explorer: not counted
    assert report.set_aside == 2

    pool.set_aside.clear()
    report, _ = synth.evolve(pool, scoop_modes, backend, np.random.default_rng(0), 2, attack.candidates)
    admitted = [e for e in pool.entries if e.origin == "adversary"]
    assert len(admitted) == report.admitted
    assert all(any(s for _, s in e.outcomes) for e in admitted)  # each one solved at least once


def test_adversary_settings_are_checked():
    with pytest.raises(ValueError, match="population"):
        TaskAdversary(population=0)
