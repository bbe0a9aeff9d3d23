"""Trajectories replay bit for bit from their initial state and actions, and survive storage."""

import numpy as np
import pytest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory, replay, run_motion


@pytest.mark.parametrize("skill", ["scoop", "flip", "catch", "toss", "serve"])
def test_replay_reproduces_the_trial_bit_for_bit(tmp_path, skill):
    task = TaskSpec.for_skill(skill, disturbance_force=0.3, egg_mass=0.055, egg_size=1.1)
    env = EggFlipEnv(task=task)
    traj = run_motion(env, scripted.MOTIONS[skill], seed=7)
    assert traj.disturbance is not None
    loaded = Trajectory.load(traj.save(tmp_path / "trial.npz"))
    again = replay(loaded)  # a fresh env, built from the stored TaskSpec
    assert np.array_equal(again.sensors, traj.sensors)
    assert np.array_equal(again.proprio, traj.proprio)
    assert again.outcome == traj.outcome
    # Replaying in the original env, after it ran other tasks, is just as exact.
    env.reset(options={"task": TaskSpec.for_skill("scoop")}, seed=1)
    assert np.array_equal(replay(loaded, env).sensors, traj.sensors)


def test_state_round_trip_continues_identically():
    env = EggFlipEnv(skill="flip")
    obs, _ = env.reset(seed=0)
    actions = env.pose_to_action(scripted.flip(obs).targets(env.control_dt, 40))
    for a in actions[:10]:
        env.step(a)
    state = env.physics.get_state()
    first = [env.step(a)[0]["proprio"] for a in actions[10:]]
    env.physics.set_state(state)
    second = [env.step(a)[0]["proprio"] for a in actions[10:]]
    assert np.array_equal(np.array(first), np.array(second))


def test_corrupt_trajectory_file_names_the_file(tmp_path):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="broken.npz is not a readable robo_coevolve trajectory"):
        Trajectory.load(bad)


def test_wrong_state_size_is_explained():
    env = EggFlipEnv(skill="scoop")
    with pytest.raises(ValueError, match="sim state has shape"):
        env.physics.set_state(np.zeros(3))


def test_views_give_egg_states_events_and_images_on_demand():
    env = EggFlipEnv(skill="scoop")
    traj = run_motion(env, scripted.scoop, seed=0)
    env.close()
    egg = traj.egg_states()
    assert egg.shape == (len(traj), 13)
    assert egg[-1, 2] > 0.03  # scooped: lifted above the pan at the end
    events = traj.events()
    assert events["blade_only"][-1] and not events["on_pan"][-1]
    obs = traj.observations(image_size=32)
    assert obs["image"].shape == (len(traj) + 1, 32, 32, 3) and obs["image"].dtype == np.uint8
    np.testing.assert_array_equal(obs["proprio"], traj.proprio)  # the replay is the same trial
    assert obs["image"][0].std() > 0 and not np.array_equal(obs["image"][0], obs["image"][-1])
    assert obs["instruction"] == traj.task.instruction
