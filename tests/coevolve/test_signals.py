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


def test_deficit_flags_a_task_failed_where_the_pool_succeeds():
    mostly_failed = [(1, False)] * 19 + [(1, True)]
    fifty_fifty = [(1, bool(i % 2)) for i in range(20)]
    reference = signals.recent_rate([mostly_failed, fifty_fifty, [(1, True)] * 60])
    assert reference == pytest.approx(71 / 100)
    short = signals.deficit(mostly_failed, reference)
    assert short == pytest.approx((0.71 - 0.05) / 0.71 * 20 / 24)
    # boundary alone ranks the wavering variant above the failed one; deficit reverses that
    assert signals.boundary(mostly_failed) < 0.2 < 0.8 < signals.boundary(fifty_fifty)
    assert signals.deficit(fifty_fifty, reference) < short / 2
    assert signals.deficit([(1, True)] * 20, reference) == 0.0  # above the reference
    assert signals.deficit(mostly_failed, None) == signals.deficit(mostly_failed, 0.0) == 0.0
    assert signals.recent_rate([[], []]) is None
    # the reference is recent: only the last two iterations any variant ran
    assert signals.recent_rate([[(1, False)] * 50 + [(2, True)], [(3, False)]]) == 0.5


def test_weakness_sums_the_weighted_signals():
    outcomes = [(1, bool(i % 5 == 0)) for i in range(20)]
    w = signals.weakness(outcomes, rare=0.5, weights=(1.0, 1.0, 0.5, 2.0), reference=0.8)
    assert w["deficit"] > 0.5
    assert w["total"] == pytest.approx(w["forgetting"] + w["boundary"] + 0.25 + 2 * w["deficit"])
    three = signals.weakness(outcomes, rare=0.5, weights=(1.0, 1.0, 0.5), reference=0.8)
    assert three["total"] == pytest.approx(w["forgetting"] + w["boundary"] + 0.25)  # no deficit
