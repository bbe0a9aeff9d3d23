"""Early stopping with real trials: idle spatula motions are cut after their prefix, scoops are not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.open_loop import Trial, actions_trial
from robo_coevolve.explore.plans import ActionPlan, PrimitivePlan
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.explore.value_model import (
    FEATURES,
    EarlyStop,
    ValueModel,
    physics_cost,
    prefix_features,
    stratified_folds,
)
from robo_coevolve.task_distribution import TaskDistribution


@pytest.fixture(scope="module")
def trials():
    """(train, test): scoops around a short search's successes, and a spatula that never moves."""
    torch.set_num_threads(1)
    tasks = TaskDistribution.for_skill("scoop")
    with LocalBackend(workers=1) as backend:
        found = PrimitiveSearch(tasks, backend, seed=0, population=50).run(200).successes
        params = [np.asarray(t.meta["params"]) for t in found[-4:]]
        rng = np.random.default_rng(0)

        def batch(n):
            drawn = tasks.sample_many(rng, 2 * n)
            moving = [
                Trial(t, PrimitivePlan(np.clip(params[i % len(params)] + rng.normal(0, 0.01, 15), 0, 1)))
                for i, t in enumerate(drawn[:n])
            ]
            idle = [actions_trial(t, np.zeros((1, 5), np.float32)) for t in drawn[n:]]
            return backend.run_trials(moving + idle)

        return batch(40), batch(40)


def test_prefix_features_read_only_the_prefix(trials):
    t = trials[0][0]
    f = prefix_features(t, 10)
    assert f.shape == (FEATURES,) and f.dtype == np.float32 and np.isfinite(f).all()
    cut = t.__class__(**{**vars(t), "sensors": t.sensors[:10].copy(), "actions": t.actions[:10]})
    assert np.array_equal(prefix_features(cut, 10), f)


def test_hopeless_trials_are_cut_and_successes_kept(trials):
    train, test = trials
    assert any(t.success for t in train) and not any(t.success for t in train[40:])
    # ~30 past successes: at cut_rate 0 the threshold would sit at the one most misjudged of them
    stop = EarlyStop.train(train, checkpoints=[25], cut_rate=0.05)
    assert len(stop.models[0]) == 5  # one model per fold, judged together
    stops = stop.stops(test)
    assert (stops[40:] == 25).all()  # the idle spatula is judged hopeless after 0.5 s
    base = physics_cost(test, 10)
    with_cut = physics_cost(test, 10, stops)
    # 80 training trials are few: the calibrated threshold still loses some scoops (the benchmark
    # measures the real trade-off on thousands of search trials)
    assert with_cut["cut_successes"] <= 0.3 * base["successes"]
    assert with_cut["steps_per_success"] < 0.8 * base["steps_per_success"]
    assert base["steps"] == sum(len(t) for t in test) * 10 and base["cut"] == 0


def test_a_cascade_cuts_each_trial_once_at_its_first_failing_checkpoint(trials):
    train, test = trials
    stop = EarlyStop.train(train, checkpoints=[50, 25], cut_rate=0.05)
    assert stop.checkpoints == [25, 50] and len(stop.thresholds) == 2
    stops = stop.stops(test)
    assert set(stops.tolist()) <= {-1, 25, 50}
    cost = physics_cost(test, 10, stops)
    lengths = np.array([len(t) for t in test])
    assert cost["steps"] == int(np.where(stops >= 0, stops, lengths).sum()) * 10


def test_folds_are_stratified_and_calibrate_on_every_past_success(trials):
    train, _ = trials
    y = np.array([t.success for t in train], np.float32)
    parts = stratified_folds(y, 5)
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(len(y)))
    wins = [int(y[p].sum()) for p in parts]
    assert max(wins) - min(wins) <= 1 and min(wins) >= 1
    stop = EarlyStop.train(train, checkpoints=[25], cut_rate=0.1)
    # the threshold is the 10% quantile of the successes' out-of-fold predictions: 10% of the past
    # successes (give or take the quantile's interpolation) fall below it
    features = np.stack([prefix_features(t, 25) for t in train])
    out_of_fold = np.zeros(len(y))
    for model, held in zip(stop.models[0], parts, strict=True):
        out_of_fold[held] = model.predict(features[held])
    below = float(np.mean(out_of_fold[y > 0] < stop.thresholds[0]))
    assert 0.0 < below <= 0.1 + 1.0 / y.sum()
    np.testing.assert_allclose(stop.out_of_fold[0], out_of_fold, rtol=1e-6)  # what train keeps


def test_the_checkpoint_is_chosen_on_the_past_trials_by_their_out_of_fold_cost(trials):
    train, _ = trials
    stop, estimates = EarlyStop.select(train, [25, 100], substeps=10, cut_rate=0.05)
    # the idle spatula is hopeless from the start: judging it at 0.5 s saves more than at 2 s
    assert set(estimates) == {25, 100} and estimates[25] > estimates[100] > 1.0
    assert stop.checkpoints == [25]
    again = EarlyStop.train(train, [25], cut_rate=0.05)
    assert stop.thresholds == again.thresholds
    # the estimate is physics_cost on the past trials, cut where their out-of-fold prediction is low
    cut = np.where(
        (stop.out_of_fold[0] < stop.thresholds[0]) & np.array([len(t) > 25 for t in train]), 25, -1
    )
    ratio = physics_cost(train, 10)["steps_per_success"] / physics_cost(train, 10, cut)["steps_per_success"]
    assert estimates[25] == pytest.approx(ratio)
    with pytest.raises(ValueError, match="candidate"):
        EarlyStop.select(train, [], substeps=10)


def test_early_stopping_needs_successes_to_calibrate(trials):
    few = [t for t in trials[0] if not t.success][:20] + [t for t in trials[0] if t.success][:3]
    with pytest.raises(ValueError, match="folds=5 past successes"):
        EarlyStop.train(few, checkpoints=[25])
    with pytest.raises(ValueError, match="folds >= 2"):
        EarlyStop.train(trials[0], checkpoints=[25], folds=1)


def _rerun(trajs, early_stop):
    """The same trials again (task and actions), each judged by ``early_stop`` while it runs."""
    with LocalBackend(workers=1) as backend:
        return backend.run_trials(
            [Trial(t.task, ActionPlan(t.actions), early_stop=early_stop) for t in trajs]
        )


def test_a_judged_trial_is_cut_while_it_runs_where_the_finished_one_would_be(trials):
    train, test = trials
    stop = EarlyStop.train(train, checkpoints=[25, 60], cut_rate=0.05)
    expected = stop.stops(test)
    assert (expected == 25).sum() >= 40 and (expected == -1).any()  # the idle ones, and some scoops
    judged = _rerun(test, stop)
    for traj, full, at in zip(judged, test, expected, strict=True):
        if at < 0:  # run to its end: the same trial, bit for bit
            assert "cut_at" not in traj.meta and traj.outcome == full.outcome
            assert np.array_equal(traj.sensors, full.sensors) and np.array_equal(traj.proprio, full.proprio)
        else:  # recorded up to the cut, failed, and the physics up to there unchanged
            assert traj.meta["cut_at"] == at and len(traj) == at
            assert not traj.success and traj.outcome["reason"] == "cut early"
            assert np.array_equal(traj.sensors, full.sensors[:at])
            assert np.array_equal(traj.proprio, full.proprio[: at + 1])
    assert physics_cost(judged, 10)["steps"] == physics_cost(test, 10, expected)["steps"]


def test_a_judge_that_cuts_nothing_changes_no_trial_even_where_the_egg_falls():
    tasks = TaskDistribution.for_skill("flip")
    rng = np.random.default_rng(3)
    with LocalBackend(workers=1) as backend:
        plain = backend.run_trials(
            [Trial(t, PrimitivePlan(rng.uniform(0, 1, 15))) for t in tasks.sample_many(rng, 12)]
        )
    assert any(len(t) < 150 for t in plain) and any(t.success for t in plain)  # some fell, some flipped
    stop = EarlyStop.train(plain * 3, checkpoints=[10, 40, 100], cut_rate=0.0, folds=2)
    never = dataclasses.replace(stop, thresholds=[-1.0, -1.0, -1.0])
    for traj, full in zip(_rerun(plain, never), plain, strict=True):
        assert traj.outcome == full.outcome and "cut_at" not in traj.meta
        assert np.array_equal(traj.sensors, full.sensors) and np.array_equal(traj.actions, full.actions)


def test_a_value_model_needs_both_outcomes():
    with pytest.raises(ValueError, match="both outcomes"):
        ValueModel().fit(np.zeros((20, FEATURES)), np.zeros(20))
    with pytest.raises(RuntimeError, match="before fit"):
        ValueModel().predict(np.zeros((1, FEATURES)))
