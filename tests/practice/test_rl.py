"""Residual PPO's maths on hand-made numbers, and determinism of a tiny practice run."""

import numpy as np
import pytest
import torch

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.motion import scripted
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.practice import RLConfig
from robo_coevolve.practice.rl import decision_rewards, gae, practise_rl, progress_rewards
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import run_actions, run_motion


def test_a_decisions_reward_sums_its_steps_and_the_last_runs_to_the_end():
    rewards = np.arange(10.0)
    np.testing.assert_allclose(decision_rewards(np.array([0, 2, 4]), rewards), [1.0, 5.0, 39.0])


def test_the_progress_reward_returns_the_progress_reached_and_the_success_bonus():
    """A scripted flip that succeeds and a motionless one: the returns are their progress (the
    scorer's) plus the bonus on the success only, and the successful one gains before its end."""
    env = EggFlipEnv(skill="flip")
    task = TaskDistribution.for_skill("flip").sample(np.random.default_rng(0))
    env.reset(seed=task.seed, options={"task": task})
    done = run_motion(env, scripted.MOTIONS["flip"], seed=task.seed)
    env.reset(seed=task.seed, options={"task": task})
    idle = run_actions(env, np.repeat(done.actions[:1], len(done), axis=0), seed=task.seed)
    env.close()
    assert done.success and not idle.success
    for traj in (done, idle):
        rewards = progress_rewards(traj, success_bonus=2.0)
        assert len(rewards) == len(traj)
        expected = (1.0 if traj.success else traj.outcome["progress"]) + 2.0 * traj.success
        assert rewards.sum() == pytest.approx(expected, abs=1e-6)
    assert progress_rewards(done, 0.0)[: len(done) // 2].sum() > 0.2


def test_gae_matches_the_discounted_sum_of_td_errors():
    r, v = np.array([0.0, 0.5, 1.0]), np.array([0.2, 0.4, 0.6])
    gamma, lam = 0.9, 0.8
    deltas = [r[0] + gamma * v[1] - v[0], r[1] + gamma * v[2] - v[1], r[2] - v[2]]
    expected = [
        deltas[0] + gamma * lam * deltas[1] + (gamma * lam) ** 2 * deltas[2],
        deltas[1] + gamma * lam * deltas[2],
        deltas[2],
    ]
    np.testing.assert_allclose(gae(r, v, gamma, lam), expected, rtol=1e-12)
    # lambda = 1: the advantage is the discounted return minus the value
    np.testing.assert_allclose(gae(r, v, gamma, 1.0)[0], r[0] + gamma * r[1] + gamma**2 * r[2] - v[0])


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match="practice.rl.clip"):
        RLConfig(clip=0.0)


def test_the_same_inputs_give_the_same_weights_on_any_number_of_workers():
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_language=False, hidden=64, predict_end=False))
    tasks = TaskDistribution.for_skill("catch").sample_many(np.random.default_rng(0), 8)
    config = RLConfig(episodes_per_update=4, value_warmup=1, minibatch=64, epochs=2, lr=1e-3, history=2)
    runs = []
    for workers in (1, 2, 1):
        with LocalBackend(workers=workers, policy_batch=3) as backend:
            practised, record = practise_rl(policy, tasks, backend, config, np.random.default_rng(5))
        runs.append((practised.state_dict(), record))
    assert len(runs[0][1]["updates"]) == 2 and runs[0][1]["updates"][1]["kl"] > 0.0  # it did learn
    for state, record in runs[1:]:
        assert [u["progress"] for u in record["updates"]] == [u["progress"] for u in runs[0][1]["updates"]]
        for key, value in runs[0][0].items():
            assert torch.equal(value, state[key]), key
    assert runs[0][0]["residual.net.0.weight"].shape[1] == 64 + 10 + 2 * 15  # features, base, history
    assert policy.residual is None  # the clone itself is left as it was
