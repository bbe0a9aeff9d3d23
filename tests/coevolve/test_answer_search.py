"""AnswerSearch: which variant it searches on, when its answer is adopted, and a real search
that replaces an answer solving nothing."""

from __future__ import annotations

import numpy as np
import pytest

from robo_coevolve.coevolve import AnswerSearch, PoolEntry, TaskPool
from robo_coevolve.coevolve.task_pool import OWN
from robo_coevolve.task_distribution import TaskDistribution


def pool_with(rates: list[tuple[int, float]]) -> TaskPool:
    """A pool whose variant i ran n primitive trials, the given share of them successes: half
    around mode 0, half from its own search."""
    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    for _ in rates[1:]:
        pool.add(PoolEntry(TaskDistribution.for_skill("scoop", egg_mass=0.07)))
    for i, (n, rate) in enumerate(rates):
        wins = int(round(n * rate))
        for j in range(n):
            pool.record(i, j < wins, 1, mode=OWN if j % 2 else 0)
    return pool


def test_the_target_is_the_least_solved_variant_under_the_bar_with_enough_trials():
    # variant 0 is solved; 2 least among those with 8 trials; 3 has too few to judge
    pool = pool_with([(10, 0.5), (10, 0.1), (10, 0.0), (3, 0.0)])
    # one lucky arm does not hide a variant the rest of its trials fail: 1 of 4 own, 0 of 16
    lucky = TaskPool.seeded(TaskDistribution.for_skill("scoop", egg_mass=0.078))
    for j in range(20):
        lucky.record(0, j == 0, 1, mode=OWN if j < 4 else j % 3)
    assert AnswerSearch(bar=0.2).target(lucky) == 0
    search = AnswerSearch(bar=0.2, min_trials=8, max_searches=2)
    assert search.target(pool) == 2
    pool.searched.append(2)
    assert search.target(pool) == 1  # each variant once
    pool.searched.append(1)
    assert search.target(pool) is None  # the rest are solved, or not judged yet
    assert AnswerSearch(max_searches=0).target(pool_with([(10, 0.0)])) is None
    assert AnswerSearch(bar=0.05).target(pool_with([(10, 0.1)])) is None


def test_an_answer_is_adopted_only_if_it_solves_the_variant_without_losing_the_nodes_tasks():
    search = AnswerSearch(margin=0.05)
    node = {"own": 1.0, "variant": 0.1}
    assert search.adopts(node, {"own": 0.95, "variant": 0.6})
    assert not search.adopts(node, {"own": 0.9, "variant": 0.6})  # loses the node's own tasks
    assert not search.adopts(node, {"own": 1.0, "variant": 0.1})  # no better where it was searched


@pytest.mark.parametrize(
    ("setting", "message"), [("trials", 10), ("bar", 0.0), ("margin", 1.0), ("demos", 0)]
)
def test_bad_settings_are_refused_by_name(setting, message):
    with pytest.raises(ValueError, match=f"coevolve.answer.{setting}"):
        AnswerSearch(**{setting: message})


def test_a_search_replaces_an_answer_that_solves_nothing_and_demonstrates_on_the_pool(backend):
    pool = pool_with([(10, 0.0)])
    nothing = np.zeros(15)  # a blade that never gets under the egg
    search = AnswerSearch(trials=300, population=50, select_trials=20, check=20, demos=30)
    found = search.run(pool, TaskDistribution.for_skill("scoop"), nothing, backend, np.random.default_rng(0))
    assert found is not None and found.target == 0 and pool.searched == [0]
    assert found.rates["node"] == {"own": 0.0, "variant": 0.0}
    assert found.rates["answer"]["variant"] >= 0.3 and found.adopted
    assert found.demos == 30 and 0 < len(found.examples) <= 30
    assert all(t.success and t.meta["source"] == "answer" for t in found.examples)
    assert np.allclose(found.examples[0].meta["params"], found.params)
    # the search (its budget and its selection round), both answers' checks, the demonstrations
    assert found.trials >= 300 + 2 * 2 * 20 + 30
    assert (
        search.run(pool, TaskDistribution.for_skill("scoop"), nothing, backend, np.random.default_rng(1))
        is None
    )


def test_the_searched_variants_survive_a_save(tmp_path):
    pool = pool_with([(10, 0.0)])
    pool.searched.append(0)
    assert TaskPool.load(pool.save(tmp_path / "pool.json")).searched == [0]
    old = pool.to_dict()
    del old["searched"]  # a pool saved before answer searches
    assert TaskPool.from_dict(old).searched == []
