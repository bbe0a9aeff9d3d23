"""Smoothing with replay validation, efficiency, and the novelty gate, on real trials."""

import numpy as np
import pytest
from conftest import scripted_trial

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.motion import scripted
from robo_coevolve.refine import (
    NoveltyGate,
    Refiner,
    mean_squared_jerk,
    refiner,
    segment_features,
    smooth_actions,
)
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import replay, run_actions


def jittery_scoop(seed):
    """The scripted scoop with white noise on x, y and the angles during the push and lift (the
    hold at the end is steady): still a success, but jerky."""
    env = EggFlipEnv(task=TaskSpec.for_skill("scoop"))
    obs, _ = env.reset(seed=seed)
    actions = env.pose_to_action(scripted.scoop(obs).targets(env.control_dt, env.horizon_steps))
    noise = NoiseSpec("white", 0.01, scale=(1, 1, 0, 1, 1)).sample(np.random.default_rng(seed), len(actions))
    noise[75:] = 0.0
    traj = run_actions(env, np.clip(actions + noise, -1, 1).astype(np.float32), seed=seed)
    env.close()
    return traj


def test_smoothing_lowers_jerk_and_the_kept_segment_succeeds_on_replay():
    trajs = [jittery_scoop(s) for s in range(3)]
    assert all(t.success for t in trajs)
    segments, report = Refiner().refine(trajs)
    assert report.survived == 3 and len(segments) >= 1
    for before, after in zip(report.jerk_before, report.jerk_after, strict=True):
        assert after < 0.7 * before  # measured on the executed blade motion
    seg = segments[0]
    assert seg.meta["smoothing"]["jerk_after"] < seg.meta["smoothing"]["jerk_before"]
    source = seg.meta["source"]
    raw = trajs[source["seed"]].actions[source["start"] : source["stop"]]
    assert raw.shape == seg.actions.shape and not np.array_equal(seg.actions, raw)  # really smoothed
    # Replaying the stored actions from the stored start state gives the stored segment.
    env = EggFlipEnv(task=seg.task)
    obs, _ = env.reset_to_state(seg.start_state, seg.disturbance, task=seg.task)
    for a in seg.actions:
        obs, *_ = env.step(a)
    np.testing.assert_array_equal(obs["proprio"], seg.proprio[-1])
    assert env.outcome().success
    env.close()


def test_a_smoothed_segment_that_no_longer_succeeds_is_dropped():
    """A 41-step linear fit flattens the flip's 0.2 s wrist roll: the egg no longer turns over."""
    flip = scripted_trial("flip", seed=0)
    kept, report = Refiner(smooth_window=41, smooth_polyorder=1).refine([flip])
    assert report.replayed == 1 and report.survived == 0 and kept == []
    kept, report = Refiner().refine([flip])  # the default smoothing keeps it
    assert report.survived == 1 and kept[0].success


def test_hold_to_end_holds_the_last_command_to_the_horizon_and_still_succeeds():
    scoop = scripted_trial("scoop", seed=0)
    (cut,), _ = Refiner(novelty={"min_distance": 0.0}).refine([scoop])
    (held,), report = Refiner(hold_to_end=True, novelty={"min_distance": 0.0}).refine([scoop])
    start, stop = held.meta["source"]["start"], held.meta["source"]["stop"]
    horizon = int(round(scoop.task.horizon * scoop.control_hz))
    assert len(cut.actions) == stop - start < horizon - start == len(held.actions)
    assert held.meta["held_steps"] == horizon - stop > 0
    np.testing.assert_array_equal(held.actions[: len(cut.actions)], cut.actions)
    assert (held.actions[len(cut.actions) :] == cut.actions[-1]).all()
    assert held.success and report.survived == 1  # judged at the horizon, spatula held still


def test_slow_wandering_successes_are_dropped_by_the_efficiency_filter():
    quick = [scripted_trial("scoop", seed=s, horizon=4.0) for s in range(3)]
    slow = scripted_trial("scoop", seed=3, horizon=4.0, motion=lambda o: scripted.scoop(o, push_end=2.6))
    assert slow.success
    kept, report = Refiner(efficiency_ratio=1.5, novelty={"min_distance": 0.0}).refine([*quick, slow])
    assert report.gentle == 4 and report.efficient == 3
    assert all(s.meta["source"]["seed"] != 3 for s in kept)


def test_the_gate_rejects_near_duplicates_and_keeps_both_flip_directions():
    right = [scripted_trial("flip", seed=0), scripted_trial("flip", seed=0)]  # the same trial twice
    left = scripted_trial("flip", seed=0, motion=lambda o: scripted.flip(o, direction=-1))
    kept, report = Refiner().refine([*right, left])
    assert report.survived == 3
    assert report.admitted == 2 and report.duplicates == 1
    rolls = sorted(np.sign(s.proprio[:, 4].sum()) for s in kept)
    assert rolls == [-1, 1]
    # Against a library that already holds both, neither gets in again.
    bank = np.array([s.meta["features"] for s in kept])
    again, report = Refiner().refine([right[0], left], library_features=bank)
    assert again == [] and report.duplicates == 2


def test_novelty_scores_penalise_similarity():
    gate = NoveltyGate(penalty=0.5, scale=0.3)
    assert gate.score(True, np.inf) == 1.0
    assert gate.score(True, 0.0) == pytest.approx(0.5)
    assert gate.score(True, 0.1) < gate.score(True, 0.5)
    flip = scripted_trial("flip", seed=0)
    seg = Refiner(smooth=False).refine([flip])[0][0]
    f = segment_features(seg)
    assert f.shape == (16 * 5 + 3,) and gate.novelty(f, f[None]) == 0.0
    with pytest.raises(ValueError, match="novelty gate"):
        NoveltyGate(scale=0)


def test_smoothing_and_jerk_basics():
    t = np.linspace(0, 1, 50)
    clean = np.stack([np.sin(2 * np.pi * t)] * 5, axis=1) * 0.5
    noisy = clean + np.random.default_rng(0).normal(0, 0.02, clean.shape)
    assert mean_squared_jerk(smooth_actions(noisy), 0.02) < 0.2 * mean_squared_jerk(noisy, 0.02)
    np.testing.assert_array_equal(smooth_actions(noisy[:3]), noisy[:3].astype(np.float32))  # too short
    assert mean_squared_jerk(noisy[:3], 0.02) == 0.0
    with pytest.raises(ValueError, match="window"):
        smooth_actions(noisy, window=1)


def test_bad_refiner_settings_are_named():
    with pytest.raises(ValueError, match="min_integrity"):
        Refiner(min_integrity=2)
    with pytest.raises(ValueError, match="efficiency_ratio"):
        Refiner(efficiency_ratio=0.5)
    with pytest.raises(ValueError, match="margin_after"):
        Refiner(margin_after=-1)


def test_replay_helper_still_matches():  # the refiner relies on exact replay of its sources
    traj = jittery_scoop(0)
    again = replay(traj)
    np.testing.assert_array_equal(again.sensors, traj.sensors)


def test_mean_pairwise_distance_measures_the_spread_of_features():
    from robo_coevolve.refine.novelty import mean_pairwise_distance

    copies = np.zeros((50, 83))
    spread = np.random.default_rng(0).normal(0.0, 1.0, size=(50, 83))
    assert mean_pairwise_distance(copies) == 0.0 and mean_pairwise_distance(copies[:1]) == 0.0
    pairs = [
        np.sqrt(np.mean((a[:80] - b[:80]) ** 2) + np.mean((a[80:] - b[80:]) ** 2))
        for i, a in enumerate(spread)
        for b in spread[i + 1 :]
    ]
    assert mean_pairwise_distance(spread) == pytest.approx(np.mean(pairs))


def test_the_same_motion_on_a_clearly_different_task_is_novel():
    """The task's 3 features count as much as the path's 80: one motion on eggs 2 cm apart is far
    from a duplicate (an RMS over all 83 values put it at 0.11, next to the 0.1 gate)."""
    from robo_coevolve.refine.novelty import distances

    path = np.random.default_rng(1).normal(size=80)
    here, there = np.r_[path, 0.0, 0.0, 0.0], np.r_[path, 1.0, 0.0, 0.0]  # x offset: 2 cm apart
    assert distances(there, here[None])[0] == pytest.approx(np.sqrt(1 / 3))
    assert NoveltyGate().novelty(there, here[None]) > 5 * NoveltyGate().min_distance
    moved = np.r_[path + 0.1, 0.0, 0.0, 0.0]  # another path on the same task: as before
    assert distances(moved, here[None])[0] == pytest.approx(0.1)


def test_a_toss_is_smoothed_over_a_window_short_enough_to_keep_its_throw(monkeypatch):
    """A throw lasts a few control steps: over the default 9 steps the smoothed scripted tosses
    all fail on replay; over toss's 5 (SKILL_SMOOTH_WINDOW) most still toss."""
    trajs = [scripted_trial("toss", seed=s) for s in range(6)]
    assert all(t.success for t in trajs)
    segments, report = Refiner().refine(trajs)
    assert report.survived >= 4 and all(s.meta["smoothing"]["window"] == 5 for s in segments)
    monkeypatch.setattr(refiner, "SKILL_SMOOTH_WINDOW", {})
    assert Refiner().refine(trajs)[1].survived == 0
