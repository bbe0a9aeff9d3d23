"""Open-loop trials through mujoco.rollout are the env's own trajectories, bit for bit."""

import numpy as np
import pytest
from same_trajectory import assert_same

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore import primitives
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial, actions_trial
from robo_coevolve.explore.plans import NoisePlan, PrimitivePlan
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import replay


@pytest.fixture(scope="module")
def sim():
    s = OpenLoopSimulator()
    yield s
    s.close()


@pytest.mark.parametrize("skill", ["scoop", "flip", "catch", "toss", "serve"])
def test_rollout_trials_replay_exactly_in_the_env(sim, skill):
    """Random primitives and noise plans on random tasks (with pushes for scoop): the rollout's
    record equals stepping EggFlipEnv with the same actions from the same start state."""
    rng = np.random.default_rng(5)
    dist = TaskDistribution.for_skill(skill, disturbance_force=2.0 if skill == "scoop" else 0.0)
    env = EggFlipEnv(skill=skill)
    endings = set()
    for i in range(6):
        plan = (
            PrimitivePlan(primitives.family(skill).sample(rng, 1)[0])
            if i % 2
            else NoisePlan(NoiseSpec(temperature=0.3), i)
        )
        traj = sim.run(Trial(dist.sample(rng), plan))
        assert_same(traj, replay(traj, env))
        endings.add(len(traj) < env.horizon_steps)
    env.close()


def test_an_egg_that_falls_off_ends_the_trial_early(sim):
    """Carry the egg out past the pan rim and tip it: the episode ends at the fall."""
    task = TaskSpec.for_skill("flip")
    env = sim.env_for(task)
    env.reset(seed=0, options={"task": task})
    poses = np.tile([0.0, 0.0, 0.08, 0.0, 0.0], (env.horizon_steps, 1))
    poses[10:60, 1] = np.linspace(0.0, 0.3, 50)  # carry it out sideways, beyond the pan
    poses[60:, 1] = 0.3
    poses[70:, 4] = 2.5  # and roll it off
    traj = sim.run(actions_trial(task, env.pose_to_action(poses)))
    assert traj.outcome["ever_on_floor"] and not traj.success
    assert traj.outcome["reason"] == "egg fell to the floor"
    assert len(traj) < env.horizon_steps
    assert_same(traj, replay(traj))


def break_servo(env):
    """A z servo with an absurd gain and no force limit: the integration blows up."""
    m = env.physics.model
    m.actuator_gainprm[2, 0] = 1e8
    m.actuator_biasprm[2, 1] = -1e8
    m.actuator_forcelimited[2] = 0


def test_a_diverging_trial_is_recorded_failed_and_the_next_one_runs():
    sim = OpenLoopSimulator()
    task = TaskSpec.for_skill("flip")
    plan = NoisePlan(NoiseSpec(temperature=0.3), 0)
    good = sim.run(Trial(task, plan))
    env = sim.env_for(task)
    gain = env.physics.model.actuator_gainprm[2].copy(), env.physics.model.actuator_biasprm[2].copy()
    break_servo(env)
    bad = sim.run(Trial(task, plan))
    assert bad.outcome["diverged"] and not bad.success
    assert bad.outcome["reason"] == "simulation diverged"
    assert len(bad) < env.horizon_steps
    env.physics.model.actuator_gainprm[2], env.physics.model.actuator_biasprm[2] = gain
    env.physics.model.actuator_forcelimited[2] = 1
    again = sim.run(Trial(task, plan))
    assert_same(good, again)
    sim.close()


def test_plans_with_wrong_actions_are_refused(sim):
    class Broken:
        def actions(self, obs, env):
            return np.zeros((3, 5))

        def describe(self):
            return {"plan": "broken"}

    with pytest.raises(ValueError, match="shape"):
        sim.run(Trial(TaskSpec.for_skill("scoop"), Broken()))
