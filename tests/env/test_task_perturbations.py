"""The TaskSpec perturbations of the robustness suite, as the env and open-loop trials apply them."""

import numpy as np
import pytest
from same_trajectory import assert_same

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.initial_state import PUSH_PHASES
from robo_coevolve.explore.open_loop import OpenLoopSimulator, actions_trial
from robo_coevolve.motion.scripted import MOTIONS
from robo_coevolve.task_spec import TaskSpec, TaskSpecError
from robo_coevolve.trajectory import replay, run_actions


@pytest.fixture(scope="module")
def sim():
    s = OpenLoopSimulator()
    yield s
    s.close()


def sweep_actions(env, steps=None):
    """A slow sideways sweep of the blade with a pitch wobble: every command differs from the last."""
    steps = steps or env.horizon_steps
    t = np.arange(steps)
    poses = np.tile([-0.125, 0.0, 0.0, 0.06, 0.0], (steps, 1))
    poses[:, 1] = 0.05 * np.sin(t / 15)
    poses[:, 3] = 0.06 + 0.1 * np.sin(t / 7)
    return env.pose_to_action(poses)


@pytest.mark.parametrize(
    "field, value, needle",
    [
        ("servo_gain", 0.1, "servo_gain"),
        ("servo_gain", 6.0, "servo_gain"),
        ("action_latency", 3, "action_latency"),
        ("action_latency", 1.5, "non-negative integer"),
        ("action_latency", -1, "non-negative integer"),
        ("egg_obs_noise", -0.001, "egg_obs_noise"),
        ("egg_obs_noise", 0.2, "egg_obs_noise"),
        ("egg_obs_dropout", -0.1, "egg_obs_dropout"),
        ("egg_obs_dropout", 5.0, "up to the horizon"),
        ("disturbance_phase", "sky", "any, pan, blade, air"),
        ("disturbance_phase", 1, "must be a string"),
    ],
)
def test_each_perturbation_field_is_validated_by_name(field, value, needle):
    with pytest.raises(TaskSpecError, match=f"TaskSpec.{field}") as e:
        TaskSpec.for_skill("scoop", **{field: value})
    assert needle in str(e.value)


def test_perturbation_fields_round_trip_and_default_to_none():
    task = TaskSpec.for_skill(
        "flip", servo_gain=0.6, action_latency=2, egg_obs_noise=0.004, egg_obs_dropout=0.1,
        disturbance_phase="air", disturbance_force=1.0,
    )  # fmt: skip
    assert TaskSpec.from_json(task.to_json()) == task
    assert task.observation_perturbed and not TaskSpec().observation_perturbed
    default = TaskSpec()
    assert (default.servo_gain, default.action_latency, default.disturbance_phase) == (1.0, 0, "any")


def test_latency_shifts_the_executed_commands_by_its_steps(sim):
    """With a latency of one step the servo follows the command sent one step before: the spatula
    path equals the one without latency whose commands start with the start pose held once."""
    task = TaskSpec.for_skill("scoop", seed=4, horizon=1.0)
    late = task.replace(action_latency=1)
    env = EggFlipEnv(task=task)
    actions = sweep_actions(env)
    start = env.pose_to_action(env.reset(seed=4)[0]["proprio"][:5])
    shifted = np.concatenate([start[None], actions[:-1]])
    a = run_actions(EggFlipEnv(task=late), actions, seed=4)
    b = run_actions(env, shifted, seed=4)
    # the servo runs the previous command (the start pose first, up to float32 rounding of it) ...
    np.testing.assert_allclose(a.proprio[1:, :5], b.proprio[1:, :5], atol=2e-4)
    assert np.abs(a.proprio[1:, :5] - run_actions(env, actions, seed=4).proprio[1:, :5]).max() > 2e-3
    # ... while proprio shows the command sent, the action
    np.testing.assert_allclose(a.proprio[1:, 10:], env.action_to_pose(actions), atol=1e-6)
    # the open-loop trial is the env's, bit for bit
    assert_same(sim.run(actions_trial(late, actions)), a)


def test_servo_gain_changes_how_closely_the_spatula_tracks(sim):
    """A softer servo lags the sweep further behind its commands; open loop equals the env."""
    errors = {}
    for gain in (0.3, 1.0, 3.0):
        task = TaskSpec.for_skill("scoop", seed=2, horizon=1.0, servo_gain=gain)
        env = EggFlipEnv(task=task)
        traj = run_actions(env, sweep_actions(env), seed=2)
        errors[gain] = float(np.abs(traj.proprio[1:, 1] - traj.proprio[1:, 11]).mean())  # y vs its command
        assert_same(sim.run(actions_trial(task, sweep_actions(env))), traj)
    assert errors[0.3] > 1.5 * errors[1.0] > 2.25 * errors[3.0]


def scripted_actions(env, seed):
    """The skill's scripted motion (``motion.scripted``) from the task's start state."""
    obs, _ = env.reset(seed=seed)
    motion = MOTIONS[env.task.skill](obs)
    return env.pose_to_action(motion.targets(env.control_dt, env.horizon_steps))


@pytest.mark.parametrize("skill, phase", [("scoop", "blade"), ("flip", "air"), ("catch", "blade")])
def test_a_phase_push_fires_only_once_the_egg_is_in_its_phase(sim, skill, phase):
    """The scripted motion puts the egg into ``phase`` after a while: the push waits from its
    random time for it, the episode is the unpushed one up to that step and differs after it, and
    an open-loop trial fires it at the same step."""
    waited = 0
    for seed in range(3):
        task = TaskSpec.for_skill(skill, seed=seed, disturbance_force=2.0, disturbance_phase=phase)
        env = EggFlipEnv(task=task)
        actions = scripted_actions(env, seed)
        armed = env.disturbance
        phases = []
        for a in actions:
            _, _, terminated, truncated, info = env.step(a)
            phases.append(info["phase"])
            if terminated or truncated:
                break
        fired = env.disturbance
        assert armed.phase == phase and fired.phase == "any", "the scripted motion reaches the phase"
        step = int(round(fired.start / env.control_dt)) - 1  # fired at the end of this step
        times = (np.arange(len(phases)) + 1) * env.control_dt
        assert phases[step] == PUSH_PHASES[phase] and times[step] >= armed.start - 1e-9
        earlier = [p for p, t in zip(phases[:step], times[:step], strict=True) if t >= armed.start]
        assert PUSH_PHASES[phase] not in earlier
        waited += bool(phases[int(armed.start / env.control_dt)] != PUSH_PHASES[phase])
        pushed = env.sensor_rows()
        calm = run_actions(EggFlipEnv(task=task.replace(disturbance_force=0.0)), actions, seed=seed)
        np.testing.assert_array_equal(pushed[: step + 1], calm.sensors[: step + 1])
        assert not np.array_equal(pushed[step + 1 : step + 4], calm.sensors[step + 1 : step + 4])
        stepped = run_actions(EggFlipEnv(task=task), actions, seed=seed)
        assert_same(sim.run(actions_trial(task, actions)), stepped)
    assert waited >= 1, "at least one push had to wait for its phase"


def test_obs_noise_and_dropout_change_the_observation_only(sim):
    """The observed egg state is noisy and freezes for the dropout; the sensor record (what the
    scorer reads) is the unperturbed episode's, and an open-loop trial ignores both."""
    task = TaskSpec.for_skill("flip", seed=1, horizon=1.0)
    noisy = task.replace(egg_obs_noise=0.005, egg_obs_dropout=0.2)
    env = EggFlipEnv(task=task)
    actions = sweep_actions(env)
    shown, true = [], []
    for t in (noisy, task):
        e = EggFlipEnv(task=t)
        obs = [e.reset(seed=1)[0]["egg"]] + [e.step(a)[0]["egg"] for a in actions]
        (shown if t is noisy else true).append((np.array(obs), e.sensor_rows()))
    (obs_n, rows_n), (obs_t, rows_t) = shown[0], true[0]
    np.testing.assert_array_equal(rows_n, rows_t)
    error = np.abs(obs_n[:, :3] - obs_t[:, :3])
    assert 0.002 < float(np.median(error)) < 0.01
    np.testing.assert_allclose(np.linalg.norm(obs_n[:, 3:7], axis=1), 1.0, atol=1e-5)
    frozen = np.flatnonzero(np.all(obs_n[1:] == obs_n[:-1], axis=1))
    assert 8 <= len(frozen) <= 10  # 0.2 s at 50 Hz: the same observation for 10 steps in a row
    assert np.all(np.diff(frozen) == 1)
    a = sim.run(actions_trial(noisy, actions))
    b = sim.run(actions_trial(task, actions))
    np.testing.assert_array_equal(a.sensors, b.sensors)
    assert a.task == noisy


def test_default_tasks_replay_unchanged(sim):
    """The defaults add nothing: a pushed default task still replays bit for bit."""
    task = TaskSpec.for_skill("scoop", seed=9, disturbance_force=2.0)
    env = EggFlipEnv(task=task)
    traj = sim.run(actions_trial(task, sweep_actions(env)))
    assert_same(traj, replay(traj))
