from __future__ import annotations

import json

import numpy as np
import pytest

from robo_coevolve.coevolve import PoolEntry, TaskPool, TaskPoolError
from robo_coevolve.coevolve.task_pool import ELITES_KEPT, OWN
from robo_coevolve.task_distribution import TaskDistribution


def pool() -> TaskPool:
    p = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    heavy = TaskDistribution.for_skill("scoop", egg_mass=0.09, egg_mass_range=0.05)
    p.add(PoolEntry(heavy, weight=3.0, origin="synthesized", parent=0, iteration=2))
    return p


def test_sampling_follows_the_weights_and_the_generator():
    p = pool()
    tasks, index = p.sample(np.random.default_rng(0), 2000)
    assert abs(np.mean(index) - 0.75) < 0.04  # weights 1 : 3
    assert all(t.egg_mass > 0.08 for t, i in zip(tasks, index, strict=True) if i == 1)
    again, index2 = p.sample(np.random.default_rng(0), 2000)
    assert index2 == index and again == tasks


def test_outcomes_and_visits_are_recorded_and_the_pool_round_trips(tmp_path):
    p = pool()
    p.record(1, True, 3, np.array([0.1, 0.2]))
    p.record(1, False, 3, policy=True)
    assert p.entries[0].policy_success() is None and p.entries[1].policy_success() == 0.0
    p.set_aside.append({"task": p.entries[1].base.to_dict(), "parent": 1, "why": "weak", "tries": 1})
    assert p.entries[1].success_rate() == 0.5
    path = p.save(tmp_path / "coevolve" / "scoop.json")
    back = TaskPool.load(path)
    assert back.to_dict() == p.to_dict()
    assert back.entries[1].tasks == p.entries[1].tasks and back.entries[1].outcomes == [(3, True), (3, False)]
    assert back.entries[1].policy_outcomes == [(3, False)]
    assert not list(path.parent.glob(".*tmp"))  # written aside and renamed


def test_the_policy_success_is_its_last_iteration_and_old_pool_files_still_load(tmp_path):
    p = pool()
    for k, ok in [(2, True), (2, True), (3, False), (3, True)]:
        p.record(1, ok, k, policy=True)
    p.record(1, False, 4)  # a primitive trial: not the policy's
    assert p.entries[1].policy_success() == 0.5
    data = p.to_dict()
    for e in data["entries"]:
        del e["policy_outcomes"], e["mode_outcomes"], e["elites"]  # as written before the per-variant split
    path = tmp_path / "scoop.json"
    path.write_text(json.dumps(data))
    back = TaskPool.load(path)
    assert back.entries[1].policy_outcomes == [] and back.entries[1].outcomes == p.entries[1].outcomes
    assert back.entries[1].mode_outcomes == [] and back.entries[1].elites == []


def test_each_variant_learns_which_search_modes_solve_it(tmp_path):
    p = pool()
    rng = np.random.default_rng(0)
    untried = p.entries[1].choose_modes(3, 3000, rng)
    assert all(abs(np.mean(untried == m) - 1 / 3) < 0.03 for m in range(3))
    for j in range(30):  # on the heavy egg, mode 2 wins 8 in 10, modes 0 and 1 1 in 10
        for m in range(3):
            p.record(1, j % 10 < (8 if m == 2 else 1), 2, mode=m)
    chosen = p.entries[1].choose_modes(3, 1000, rng)
    assert np.mean(chosen == 2) > 0.95
    assert abs(np.mean(p.entries[0].choose_modes(3, 3000, rng) == 2) - 1 / 3) < 0.03  # per variant
    assert set(p.entries[1].choose_modes(4, 1000, rng)) >= {2, 3}  # a new mode gets tried
    path = p.save(tmp_path / "scoop.json")
    assert TaskPool.load(path).entries[1].mode_outcomes == p.entries[1].mode_outcomes


def test_a_variant_keeps_its_best_trials_and_fits_its_own_search_around_the_best(tmp_path):
    p = pool()
    e = p.entries[1]
    rng = np.random.default_rng(0)
    assert e.own_mode() is None and set(e.choose_modes(2, 200, rng)) == {0, 1}  # no own search yet
    with pytest.raises(ValueError, match="8 scored primitive trials"):
        e.sample_own(rng)
    # two motions score well here: the better one around 0.2, the other around 0.8
    for j in range(12):
        e.add_elite(2.0 + j / 100, np.full(15, 0.2) + rng.normal(0, 0.01, 15))
        e.add_elite(1.5 + j / 100, np.full(15, 0.8) + rng.normal(0, 0.01, 15))
        e.add_elite(0.1, np.full(15, 0.5))  # a failure: never kept among these
    assert len(e.elites) == ELITES_KEPT and [s for s, _ in e.elites] == sorted(
        (s for s, _ in e.elites), reverse=True
    )
    mean, std = e.own_mode(min_std=0.03)
    assert np.allclose(mean, 0.2, atol=0.02) and np.allclose(std, 0.03)  # not between the two
    x = np.array([e.sample_own(rng) for _ in range(500)])
    assert abs(x.mean() - 0.2) < 0.01 and abs(x.std() - 0.03) < 0.005
    # the own search is an arm of the variant's Thompson sampling: it wins here, so it is chosen
    assert OWN in set(e.choose_modes(2, 200, rng))
    for j in range(20):
        p.record(1, True, 3, mode=OWN)
        p.record(1, j % 10 == 0, 3, mode=j % 2)
    assert np.mean(e.choose_modes(2, 1000, rng) == OWN) > 0.9
    assert e.own_success(3) == (1.0, 20, 0.2) and e.own_success(2) == (None, 0, None)  # mode 0 won 2 of 10
    back = TaskPool.load(p.save(tmp_path / "scoop.json")).entries[1]
    assert back.elites == e.elites and np.allclose(back.own_mode()[0], mean)


def test_a_damaged_pool_file_names_itself(tmp_path):
    path = tmp_path / "scoop.json"
    path.write_text(json.dumps(pool().to_dict())[:50])
    with pytest.raises(TaskPoolError, match="scoop.json"):
        TaskPool.load(path)
    with pytest.raises(TaskPoolError, match="no task pool"):
        TaskPool.load(tmp_path / "missing.json")


def test_a_pool_holds_one_skill():
    p = pool()
    with pytest.raises(ValueError, match="flip"):
        p.add(PoolEntry(TaskDistribution.for_skill("flip")))
