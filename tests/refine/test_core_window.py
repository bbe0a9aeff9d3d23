"""Core segments: the attempt that worked, without the failed retry before it."""

import numpy as np
import pytest
from conftest import run_poses, scripted_trial

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.refine import Refiner, core_window
from robo_coevolve.refine.core_window import states_along
from robo_coevolve.scoring import Scorer
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


def test_a_failed_retry_is_pruned_and_the_successful_part_kept(retried_scoop):
    traj, dropped_after = retried_scoop
    scorer = Scorer(1 / traj.control_hz)
    start, stop = core_window(traj, scorer, margin_after=10)
    events = traj.events()
    assert events["lifted"][:dropped_after].any()  # the first attempt did lift the egg...
    assert start > dropped_after + 10  # ...and is cut away with its drop
    assert events["on_pan"][start] and not events["on_blade"][start]  # back on the pan: attempt two
    assert events["on_blade"][start:stop].any()
    assert stop - start < len(traj) // 2

    segments, report = Refiner(smooth=False).refine([traj])  # margin_after 0.2 s: 10 steps at 50 Hz
    assert report.survived == report.admitted == 1
    seg = segments[0]
    assert seg.success and seg.meta["source"]["start"] == start
    np.testing.assert_array_equal(seg.actions, traj.actions[start:stop])
    env = EggFlipEnv(task=traj.task)
    np.testing.assert_array_equal(seg.states[0], states_along(traj, env)[start])
    np.testing.assert_array_equal(seg.proprio, traj.proprio[start : stop + 1])  # the same physics
    env.close()
    # margin_after=None keeps the rest of the trial: what to do once the egg is scooped.
    (whole,), _ = Refiner(smooth=False, margin_after=None).refine([traj])
    assert whole.meta["source"]["start"] == start and whole.meta["source"]["stop"] == len(traj)
    assert whole.success and len(whole) == len(traj) - start


def test_a_plain_success_keeps_its_handling_and_the_settled_end():
    traj = scripted_trial("flip", seed=1)
    start, stop = core_window(traj, Scorer(1 / traj.control_hz), margin_after=5)
    ev = traj.events()
    assert start == 0  # no earlier attempt: the segment begins where the episode does
    assert ev["upside_down"][stop - 1] and stop <= len(traj)


def test_failures_have_no_core_window():
    traj = scripted_trial("scoop", seed=0, motion=lambda o: scripted.scoop(o, miss_by=0.09))
    assert not traj.success
    assert core_window(traj, Scorer(1 / traj.control_hz)) is None


def test_a_toss_caught_right_side_up_is_pruned_before_the_toss_that_turns_the_egg():
    """A straight throw caught upright puts the egg back where a toss starts (upright, at rest on
    the blade): the core of the second, turning toss starts after the first one."""
    env = EggFlipEnv(task=TaskSpec.for_skill("toss", horizon=2.4))
    obs, _ = env.reset(seed=0)
    initial = env.initial_state.copy()
    actions, proprio = [], [obs["proprio"]]
    first = 45  # 0.9 s: thrown, caught upright and settled
    straight = scripted.toss(obs, roll=0.0, pitch=0.0).targets(env.control_dt, first)
    obs = run_poses(env, obs, straight, actions, proprio)
    second = scripted.toss(obs).targets(env.control_dt, env.horizon_steps - first)
    run_poses(env, obs, second, actions, proprio)
    traj = Trajectory.from_env(env, initial, actions, proprio, 0, {"plan": "retry"})
    env.close()
    assert traj.success, traj.outcome
    ev = traj.events()
    assert ev["in_air"][:first].any() and ev["up_z"][first - 1] > 0.99  # thrown once, still upright
    start, stop = core_window(traj, Scorer(1 / traj.control_hz), margin_after=10)
    landed = np.flatnonzero(ev["in_air"][:first])[-1]
    assert landed < start <= first + 5  # after the first throw landed, before the second begins
    assert ev["in_air"][start:stop].any() and ev["upside_down"][stop - 1]


def test_a_plain_toss_keeps_its_throw():
    traj = scripted_trial("toss", seed=2)
    start, stop = core_window(traj, Scorer(1 / traj.control_hz), margin_after=10)
    ev = traj.events()
    assert start == 0 and ev["in_air"][:stop].any() and ev["upside_down"][stop - 1]


@pytest.mark.parametrize("side", ["yolk", "white"])
def test_a_serve_keeps_its_carry_from_either_side_up(side):
    """A serve starts from the egg at rest on the blade, yolk up or turned over: its core starts
    at the episode's start and ends with the egg on the plate."""
    traj = scripted_trial("serve", seed=1, egg_side_up=side)
    assert traj.success, traj.outcome
    start, stop = core_window(traj, Scorer(1 / traj.control_hz), margin_after=10)
    ev = traj.events()
    assert start == 0 and ev["blade_only"][0] and ev["plate_only"][stop - 1]
