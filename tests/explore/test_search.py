"""Primitive search from zero demonstrations: success climbs within a small budget."""

import numpy as np
import pytest

from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PolishConfig, PrimitiveSearch, evaluate_params, trial_score
from robo_coevolve.task_distribution import TaskDistribution


@pytest.fixture(scope="module")
def scoop_search():
    with LocalBackend(workers=2) as backend:
        search = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40)
        result = search.run(budget=320)
        evaluation = evaluate_params(result.best_params, search.tasks, backend, n=30, seed=99)
    return result, evaluation


def test_scoop_success_climbs_from_the_random_prior(scoop_search):
    result, evaluation = scoop_search
    rates = [g.success_rate for g in result.history]
    assert result.trials == 320 and len(rates) == 8
    assert rates[0] <= 0.15  # random primitives rarely scoop
    assert np.mean(rates[-2:]) >= rates[0] + 0.3, rates
    assert np.mean([t.success for t in evaluation]) >= 0.6  # the search's answer, on fresh tasks
    assert result.successes and all(t.success for t in result.successes)
    assert all(t.meta["plan"] == "primitive" and "generation" in t.meta for t in result.successes)


def test_same_seed_same_search_with_any_worker_count(scoop_search):
    result, _ = scoop_search
    with LocalBackend(workers=1) as backend:
        again = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40).run(
            budget=120
        )
    assert [g.success_rate for g in again.history] == [g.success_rate for g in result.history[:3]]
    first = [t for t in result.successes if t.meta["generation"] < 3]
    assert [t.task for t in again.successes] == [t.task for t in first]


def test_toss_is_found_from_nothing_in_the_throw_family():
    """No demonstration, no hand-set parameter: the search over the throw family finds tosses
    within 400 trials, and its answer tosses on fresh tasks."""
    with LocalBackend(workers=2) as backend:
        search = PrimitiveSearch(TaskDistribution.for_skill("toss"), backend, seed=1, population=40)
        result = search.run(budget=400)
        evaluation = evaluate_params(result.best_params, search.tasks, backend, n=30, seed=99)
    rates = [g.success_rate for g in result.history]
    assert result.best_params.shape == (primitives.THROW.dim(),)
    assert rates[0] <= 0.05 and np.mean(rates[-2:]) >= 0.2, rates
    assert np.mean([t.success for t in evaluation]) >= 0.5
    assert all(t.success and t.task.skill == "toss" for t in result.successes)


def test_target_stops_the_search_early():
    with LocalBackend(workers=2) as backend:
        result = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40).run(
            budget=4000, target=0.5, patience=1
        )
    assert result.trials < 4000


def test_selection_picks_the_mode_that_succeeds_most_and_the_answer_demonstrates_it(scoop_search):
    with LocalBackend(workers=2) as backend:
        result = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40).run(
            budget=320, select_trials=10, demos=12, demo_bar=0.0
        )
        assert len(result.selection) == len(result.modes) == len(result.selection_trials) >= 1
        # one round of 10 each, a second for the modes within 10 points of the best after it
        assert all(n in (10, 20) for n in result.selection_trials)
        if len(result.modes) > 1:
            assert max(result.selection_trials) == 20
        assert result.trials == 290 + sum(result.selection_trials) + 12
        best = int(np.argmax(result.selection))
        assert result.selection_trials[best] == 20 or len(result.modes) == 1
        np.testing.assert_array_equal(result.best_params, result.modes[best])
        assert [g.trials for g in result.history][-1] == 290
        # The demonstrations: the answer itself, without noise, on 12 fresh tasks.
        assert len(result.demos) == 12 and len({t.task.seed for t in result.demos}) == 12
        for t in result.demos:
            assert t.meta["demonstration"] is True
            np.testing.assert_allclose(t.meta["params"], result.best_params)
        wins = [t for t in result.demos if t.success]
        assert wins and result.examples == wins  # what the library learns from
        assert result.demo_success == len(wins) / 12
        with pytest.raises(ValueError, match="leaves nothing"):
            PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, population=40).run(
                30, select_trials=10
            )
        with pytest.raises(ValueError, match="demos=-1 must be >= 0"):
            PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, population=40).run(30, demos=-1)


def test_without_demonstrations_the_search_successes_are_the_examples(scoop_search):
    result, _ = scoop_search
    assert result.demos == [] and result.demo_success is None
    assert result.examples == result.successes


def test_the_demonstrations_are_the_examples_only_from_a_reliable_answer():
    from types import SimpleNamespace

    from robo_coevolve.explore.search import SearchResult

    found = [SimpleNamespace(success=True)]
    shown = [SimpleNamespace(success=ok) for ok in (True, True, True, False)]  # 75% success
    result = SearchResult("flip", 10, [], None, [], successes=found, demos=shown, demo_bar=0.75)
    assert result.demo_success == 0.75 and result.examples == shown[:3]
    result.demo_bar = 0.8  # a weaker answer than the bar: the search's own successes
    assert result.examples == found


def test_below_the_bar_both_example_sets_contend():
    from types import SimpleNamespace

    from robo_coevolve.explore.search import SearchResult

    found = [SimpleNamespace(success=True)] * 5
    shown = [SimpleNamespace(success=ok) for ok in (True, True, True, False)]  # 75% success
    result = SearchResult("catch", 10, [], None, [], successes=found, demos=shown, demo_bar=0.75)
    assert result.contenders == {"demonstrations": shown[:3]}  # at the bar: the answer alone
    result.demo_bar = 0.8
    assert result.contenders == {"search": found, "demonstrations": shown[:3]}
    failed = SearchResult("catch", 10, [], None, [], successes=found, demos=shown[3:], demo_bar=0.8)
    assert failed.contenders == {"search": found}  # no demonstration succeeded
    assert SearchResult("catch", 10, [], None, [], successes=found).contenders == {"search": found}


def test_score_ranks_success_over_failure_and_safer_success_higher():
    fail = {"success": False, "progress": 0.9, "margin": 0.0}
    tight = {"success": True, "progress": 1.0, "margin": 0.1}
    safe = {"success": True, "progress": 1.0, "margin": 0.8}
    assert trial_score(fail) < trial_score(tight) < trial_score(safe)


def test_budget_must_be_positive():
    with LocalBackend(workers=1) as backend, pytest.raises(ValueError, match="budget"):
        PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend).run(budget=0)


def test_below_the_demo_bar_the_search_restarts_and_keeps_the_best_demonstrated_answer():
    def search(backend, seed=3, **kw):
        return PrimitiveSearch(TaskDistribution.for_skill("catch"), backend, seed=seed, population=40).run(
            budget=80, demos=10, **kw
        )

    with LocalBackend(workers=2) as backend:
        once = search(backend, demo_bar=1.0)  # catch answers of 80 trials are rarely perfect
        three = search(backend, demo_bar=1.0, restarts=2)
        met = search(backend, demo_bar=0.0, restarts=2)
        until = [search(backend, seed=s, demo_bar=1.0, restarts=2) for s in (8, 9)]
        with pytest.raises(ValueError, match="restarts=-1 must be >= 0"):
            search(backend, restarts=-1)
    assert three.searches[0] == once.demo_success  # the first search is the search without restarts
    assert len(three.searches) == 3 and three.trials == 3 * once.trials == 3 * 90
    assert three.demo_success == max(three.searches)
    kept = three.searches.index(three.demo_success)
    same = [t.task for t in three.demos] == [t.task for t in once.demos]
    assert same == (kept == 0)  # a later search's answer ran on its own fresh tasks
    assert all(t.meta["demonstration"] for t in three.demos)
    assert len(met.searches) == 1 and met.trials == 90  # the bar met: no restart
    for result in until:  # restarts stop at the first search that meets the bar
        n = len(result.searches)
        assert all(r < 1.0 for r in result.searches[:-1]) and (n == 3 or result.searches[-1] == 1.0)
        assert result.trials == n * 90


def test_polish_turns_an_answer_that_never_scoops_into_one_that_does_and_it_demonstrates():
    with LocalBackend(workers=2) as backend:
        search = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40)
        polish = PolishConfig(trials=480, population=20, tasks=8, check=40, below=1.0)
        result = search.run(60, select_trials=10, demos=12, demo_bar=0.0, polish=polish)
        unpolished = evaluate_params(
            np.asarray(result.polish["answer"]), search.tasks, backend, n=30, seed=99
        )
        polished = evaluate_params(result.best_params, search.tasks, backend, n=30, seed=99)
        done = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=40).run(
            200, select_trials=10, demos=12, demo_bar=0.0, polish=polish
        )
    p = result.polish
    assert p["adopted"] and p["check"][1] >= p["check"][0] + 0.5, p  # 60 trials find no scoop
    assert len(p["generations"]) == 3 and p["trials"] == 3 * 20 * 8 + 2 * 40
    assert np.mean([t.success for t in polished]) >= np.mean([t.success for t in unpolished]) + 0.5
    assert any(np.array_equal(m, result.best_params) for m in result.modes)  # it replaced its mode
    # the demonstrations were run afresh by the polished answer, after the first ones
    assert (
        result.demo_success >= 0.6
        and result.trials == 30 + sum(result.selection_trials) + 12 + p["trials"] + 12
    )
    assert done.polish == {"skipped": "the answer succeeds 100% >= below"} and done.trials < 240


def test_polish_settings_are_checked():
    with pytest.raises(ValueError, match="cover one generation"):
        PolishConfig(trials=100, population=20, tasks=8)
    with pytest.raises(ValueError, match="min_std"):
        PolishConfig(std=0.01, min_std=0.02)
    with pytest.raises(ValueError, match="below"):
        PolishConfig(below=0.0)
