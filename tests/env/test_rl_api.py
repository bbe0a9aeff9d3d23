"""The env as RL libraries take it: registered ids, env checkers, vector envs, a PPO run, and the
dense reward's potential-based shaping."""

from __future__ import annotations

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gymnasium_check_env

import robo_coevolve
from robo_coevolve import ENV_ID, SKILL_ENV_IDS, SKILLS, TaskSpec
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion.scripted import MOTIONS
from robo_coevolve.scoring import Thresholds
from robo_coevolve.scoring.events import PHASES, phase_index, row_events, step_events
from robo_coevolve.scoring.progress import ProgressTracker, progress

ALL_IDS = [ENV_ID, *SKILL_ENV_IDS.values()]


# ----------------------------------------------------------------------------- registration
def test_every_skill_has_its_id():
    assert set(SKILL_ENV_IDS) == set(SKILLS)
    for skill, env_id in SKILL_ENV_IDS.items():
        spec = gymnasium.spec(env_id)
        assert spec.max_episode_steps == round(TaskSpec.for_skill(skill).horizon * 50)
        env = gymnasium.make(env_id)
        try:
            assert env.unwrapped.task == TaskSpec.for_skill(skill)
            assert env.unwrapped.horizon_steps == spec.max_episode_steps
        finally:
            env.close()
    robo_coevolve.register_envs()  # idempotent


# ----------------------------------------------------------------------------- env checkers
@pytest.mark.parametrize("reward_type", ["sparse", "dense"])
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_env_checkers_take_the_env_as_made(env_id, reward_type):
    sb3_env_checker = pytest.importorskip("stable_baselines3.common.env_checker")  # the rl extra
    kwargs = {} if reward_type == "sparse" else {"reward_type": "dense"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(env_id, **kwargs)
        try:
            gymnasium_check_env(env.unwrapped)
            sb3_env_checker.check_env(env, warn=True)
        finally:
            env.close()


def test_default_observation_is_arrays_with_the_skill_index():
    env = gymnasium.make(SKILL_ENV_IDS["flip"])
    try:
        obs, info = env.reset(seed=0)
        assert all(isinstance(v, np.ndarray) for v in obs.values())
        np.testing.assert_array_equal(obs["instruction"], np.eye(len(SKILLS))[SKILLS.index("flip")])
        assert info["instruction"] == TaskSpec.for_skill("flip").instruction
        _, _, _, _, info = env.step(env.action_space.sample())
        assert info["instruction"] == TaskSpec.for_skill("flip").instruction
    finally:
        env.close()


def test_make_vec_steps_a_batch():
    envs = gymnasium.make_vec(SKILL_ENV_IDS["scoop"], num_envs=3, vectorization_mode="sync")
    try:
        obs, _ = envs.reset(seed=0)
        assert obs["proprio"].shape == (3, 15) and obs["instruction"].shape == (3, len(SKILLS))
        assert not np.array_equal(obs["egg"][0], obs["egg"][1])  # each env draws its own start
        obs, reward, terminated, truncated, _ = envs.step(envs.action_space.sample())
        assert obs["egg"].shape == (3, 13) and reward.shape == (3,)
        assert obs in envs.observation_space
    finally:
        envs.close()


def test_ppo_learns_on_the_env_as_made():
    ppo = pytest.importorskip("stable_baselines3").PPO  # the rl extra
    env = gymnasium.make(SKILL_ENV_IDS["scoop"])
    model = ppo("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=256)
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert action in env.action_space
    env.close()


# ----------------------------------------------------------------------------- dense reward
def _episode(env: EggFlipEnv, skill: str, scripted: bool, seed: int = 0):
    """Rewards and infos of one episode: the skill's scripted motion, or uniform random actions."""
    obs, info = env.reset(seed=seed)
    if scripted:
        actions = env.pose_to_action(MOTIONS[skill](obs).targets(env.control_dt, env.horizon_steps))
    else:
        actions = np.random.default_rng(seed).uniform(-1, 1, (env.horizon_steps, 5)).astype(np.float32)
    rewards, infos = [], [info]
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            break
    return np.array(rewards), infos


def test_dense_return_of_a_scripted_scoop_beats_random_ones():
    env = EggFlipEnv(skill="scoop", reward_type="dense", gamma=1.0)
    scripted, infos = _episode(env, "scoop", scripted=True)
    assert infos[-1]["outcome"]["success"]
    # Before the episode's end, the shaping has already paid for the progress made.
    assert scripted[:-1].sum() > 0.5
    for seed in range(3):
        random, random_infos = _episode(env, "scoop", scripted=False, seed=seed)
        assert not random_infos[-1]["outcome"]["success"]
        assert scripted[:-1].sum() > random[:-1].sum() + 0.3
        assert scripted.sum() > random.sum() + 0.9
    env.close()


@pytest.mark.parametrize("skill", SKILLS)
@pytest.mark.parametrize("scripted", [True, False], ids=["scripted", "random"])
def test_shaping_telescopes(skill, scripted):
    """With gamma=1 the shaping summed up to any step is Phi(s') - Phi(start); over the episode it
    is 0 (Phi is 0 at the start and after the end), so the dense return is the sparse one."""
    env = EggFlipEnv(skill=skill, reward_type="dense", gamma=1.0)
    rewards, infos = _episode(env, skill, scripted)
    shaping = np.array([i["shaping"] for i in infos[1:]])
    potential = np.array([i["potential"] for i in infos])
    assert potential[0] == 0.0 and potential[-1] == 0.0
    np.testing.assert_allclose(np.cumsum(shaping), potential[1:] - potential[0], atol=1e-12)
    sparse = float(infos[-1]["outcome"]["success"])
    assert rewards.sum() == pytest.approx(sparse, abs=1e-12)
    if scripted:
        assert potential[1:-1].max() > 0.3  # the scripted motion makes progress as it goes
    env.close()


def test_discounted_dense_return_is_the_sparse_one():
    gamma = 0.9
    env = EggFlipEnv(skill="scoop", reward_type="dense", gamma=gamma)
    rewards, infos = _episode(env, "scoop", scripted=True)
    discounts = gamma ** np.arange(len(rewards))
    sparse = np.zeros(len(rewards))
    sparse[-1] = float(infos[-1]["outcome"]["success"])
    assert sparse[-1] == 1.0
    assert np.dot(discounts, rewards) == pytest.approx(np.dot(discounts, sparse), abs=1e-9)
    assert np.abs(rewards[:-1]).max() > 0.01  # yet the rewards on the way are not the sparse zeros
    env.close()


@pytest.mark.parametrize("skill", [s for s in SKILLS if s != "season"])  # a season's reads every grain
@pytest.mark.parametrize("scripted", [True, False], ids=["scripted", "random"])
def test_running_progress_is_progress_of_every_prefix(skill, scripted):
    """The tracker's O(1) update gives what ``progress`` computes from the whole record so far."""
    env = EggFlipEnv(skill=skill)
    _episode(env, skill, scripted)
    rows, thresholds, hold = env.sensor_rows(), env.scorer.thresholds, env.scorer.hold_steps
    events = step_events(env.record(), thresholds)
    columns = {name: s.start for name, s in env.physics.sensor_slices.items()}
    tracker = ProgressTracker(skill, hold, thresholds)
    for t in range(len(rows)):
        row = row_events(rows[t], columns, thresholds)
        for key, value in row.items():
            assert value == events[key][t], (key, t)
        prefix = {key: v[: t + 1] for key, v in events.items()}
        assert tracker.update(row) == progress(skill, prefix, hold, thresholds), t
    env.close()


def test_tracker_rejects_an_unknown_skill():
    with pytest.raises(ValueError, match="stir"):
        ProgressTracker("stir", 10, Thresholds())


def test_phase_index_order_on_scalars_and_arrays():
    flags = dict(on_blade=True, on_pan=True, on_burner=False, on_floor=False, finite=True, on_plate=False)
    assert PHASES[phase_index(**flags)] == "pinched"
    assert PHASES[phase_index(**{**flags, "on_pan": False, "on_plate": True})] == "pinched"
    assert (
        PHASES[phase_index(**{**flags, "on_blade": False, "on_pan": False, "on_plate": True})] == "on plate"
    )
    assert PHASES[phase_index(**{**flags, "on_floor": True})] == "on floor"
    assert PHASES[phase_index(**{**flags, "finite": False})] == "diverged"
    blade = np.array([True, False, False])
    pan = np.array([False, True, False])
    none = np.zeros(3, bool)
    got = phase_index(blade, pan, none, none, ~none, none)
    assert [PHASES[i] for i in got] == ["on blade", "on pan", "in air"]
