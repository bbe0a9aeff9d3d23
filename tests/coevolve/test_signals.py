from __future__ import annotations

import numpy as np
import pytest

from robo_coevolve.coevolve import signals


def test_forgetting_flags_a_task_solved_then_failed():
    solved_then_failed = [(1, True)] * 10 + [(2, True)] * 10 + [(3, False)] * 8 + [(3, True)] * 2
    assert signals.forgetting(solved_then_failed) == pytest.approx(0.8)
    still_solved = [(1, True)] * 10 + [(2, True)] * 10
    never_solved = [(1, False)] * 10 + [(2, False)] * 10
    assert signals.forgetting(still_solved) == 0.0
    assert signals.forgetting(never_solved) == 0.0
    assert signals.forgetting([(1, True)] * 10 + [(2, False)]) == 0.0  # one trial is not evidence


def test_boundary_flags_a_fifty_fifty_task():
    fifty_fifty = [(1, bool(i % 2)) for i in range(20)]
    assert signals.boundary(fifty_fifty) > 0.8
    assert signals.boundary([(1, True)] * 20) == 0.0
    assert signals.boundary([(1, False)] * 20) == 0.0
    assert signals.boundary([(1, True), (1, False)]) < 0.4  # too few trials to call it


def test_action_spread_grows_with_the_policy_uncertainty():
    rng = np.random.default_rng(0)
    sure = rng.normal(0.0, 0.001, size=(16, 5))
    unsure = rng.normal(0.0, 0.3, size=(16, 5))
    assert signals.action_spread(sure) < 0.05 < 0.9 < signals.action_spread(unsure)
    with pytest.raises(ValueError, match="2 samples"):
        signals.action_spread(np.zeros((1, 5)))


def test_rarity_flags_an_unvisited_region():
    rng = np.random.default_rng(0)
    visits = rng.uniform(0.0, 0.5, size=(500, 3))  # only the lower half of every axis
    visited, unvisited = np.full(3, 0.25), np.full(3, 0.9)
    r = signals.rarity(np.stack([visited, unvisited]), visits)
    assert r[1] > 0.9 and r[0] < 0.05
    assert signals.rarity(unvisited[None], np.zeros((0, 3)))[0] == 1.0


def test_weakness_sums_the_weighted_signals():
    w = signals.weakness([(1, bool(i % 2)) for i in range(20)], rare=0.5, weights=(1.0, 1.0, 0.5))
    assert w["total"] == pytest.approx(w["forgetting"] + w["boundary"] + 0.25)
