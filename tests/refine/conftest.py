"""Real trials for the refiner's tests, made with the scripted motions."""

import numpy as np
import pytest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.motion.keyframes import KeyframeMotion
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory, run_motion


def run_poses(env, obs, poses, actions, proprio):
    for pose in poses:
        a = env.pose_to_action(pose)
        obs, *_ = env.step(a)
        actions.append(a)
        proprio.append(obs["proprio"])
    return obs


@pytest.fixture(scope="session")
def retried_scoop():
    """A scoop that lifts the egg, drops it back on the pan (the blade is lowered and yanked
    out from under it), then scoops it again and succeeds. Returns (trajectory, step of the drop)."""
    env = EggFlipEnv(task=TaskSpec.for_skill("scoop", horizon=6.0))
    obs, _ = env.reset(seed=0)
    initial = env.initial_state.copy()
    actions, proprio = [], [obs["proprio"]]
    obs = run_poses(env, obs, scripted.scoop(obs).targets(env.control_dt, 80), actions, proprio)
    p = obs["proprio"][:5].astype(np.float64)
    drop = KeyframeMotion(
        [0, 0.4, 0.5, 0.6, 1.2],
        [
            p,
            [p[0], p[1], 0, 0, 0],
            [p[0], p[1], 0, 0, 0],
            [p[0] - 0.16, p[1], 0, 0.06, 0],
            [p[0] - 0.16, p[1], 0, 0.06, 0],
        ],
    )
    obs = run_poses(env, obs, drop.targets(env.control_dt, 60), actions, proprio)
    second = scripted.scoop(obs).targets(env.control_dt, env.horizon_steps - len(actions))
    run_poses(env, obs, second, actions, proprio)
    traj = Trajectory.from_env(env, initial, actions, proprio, 0, {"plan": "retry"})
    env.close()
    assert traj.success
    return traj, 80


def scripted_trial(skill, seed, motion=None, **task):
    env = EggFlipEnv(task=TaskSpec.for_skill(skill, **task))
    traj = run_motion(env, motion or scripted.MOTIONS[skill], seed=seed)
    env.close()
    return traj
