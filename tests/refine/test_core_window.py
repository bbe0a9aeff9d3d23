"""Core segments: the attempt that worked, without the failed retry before it."""

import numpy as np
from conftest import scripted_trial

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.refine import Refiner, core_window
from robo_coevolve.refine.core_window import states_along
from robo_coevolve.scoring import Scorer


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
