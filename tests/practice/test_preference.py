"""Preference practice (DPO): pairs within a task, a loss that moves the margin, determinism, and a
weak clone that improves on its own tries."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from bare_settings import policy_config, train_config
from scripted_segments import scripted_segments

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import LocalBackend, RolloutBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, evaluate_tasks
from robo_coevolve.motion import scripted
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.practice.preference import PreferenceConfig, practise_preference, preference_pairs
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import run_actions


class ScriptedTries(RolloutBackend):
    """Tries of the scripted motion with each episode's noise, whatever the policy: real
    trajectories with a mix of successes and failures, without a trained policy to make them."""

    def run_trials(self, trials):
        raise AssertionError("preference practice runs closed-loop episodes only")

    def run_policy(self, policy, episodes):
        out = []
        for ep in episodes:
            env = EggFlipEnv(task=ep.task)
            obs, _ = env.reset(seed=ep.task.seed)
            motion = scripted.MOTIONS[ep.task.skill](obs).targets(env.control_dt, env.horizon_steps)
            actions = env.pose_to_action(motion)
            actions = actions + ep.noise.sample(np.random.default_rng(ep.noise_seed), len(actions))
            out.append(run_actions(env, np.clip(actions, -1.0, 1.0), seed=ep.task.seed))
            env.close()
        return out


def _try(success: bool, margin: float = 0.5, progress: float = 0.5):
    return SimpleNamespace(
        success=success, outcome={"success": success, "margin": margin, "progress": progress}
    )


def _tiny_policy(seed: int = 0) -> VLAPolicy:
    torch.manual_seed(seed)
    return VLAPolicy(policy_config(use_language=False, hidden=32, chunk=4, execute=2, min_std=0.05))


def _flip_tasks(n: int, seed: int = 3):
    return TaskDistribution.for_skill("flip").sample_many(np.random.default_rng(seed), n)


def test_pairs_join_a_success_and_a_failure_of_the_same_task_clearest_first():
    groups = [
        [_try(True, margin=0.2), _try(False, progress=0.9), _try(False, progress=0.1)],
        [_try(True), _try(True)],  # all succeed: no pair
        [_try(False), _try(False)],  # all fail: no pair
        [_try(False, progress=0.3), _try(True, margin=0.9), _try(True, margin=0.1)],
    ]
    pairs = preference_pairs(groups, cap=2)
    flat = [t for g in groups for t in g]
    ends = np.cumsum([len(g) for g in groups])
    task_of = [int(np.searchsorted(ends, i, side="right")) for i in range(len(flat))]
    assert all(task_of[w] == task_of[lo] for w, lo in pairs)
    assert all(flat[w].success and not flat[lo].success for w, lo in pairs)
    # The clearest pairs first, two per task at most: the lower-progress failure, the safer success.
    assert pairs == [(0, 2), (0, 1), (8, 7), (9, 7)]


def test_a_dpo_step_raises_the_chosen_minus_rejected_margin_and_leaves_the_input_alone():
    policy = _tiny_policy()
    policy.set_normalization(ChunkDataset.from_segments(scripted_segments("flip", 2), 4).statistics())
    before = {k: v.clone() for k, v in policy.state_dict().items()}
    config = PreferenceConfig(
        samples=4, temperature=0.1, noise_scale=(1.0,) * 5, epochs=3, batch_pairs=4, lr=1e-3, bc_weight=0.0
    )
    trained, record = practise_preference(
        policy, _flip_tasks(3), ScriptedTries(), config, np.random.default_rng(0)
    )
    assert record["pairs"] >= 4 and record["tasks_with_pairs"] >= 2, record
    steps = record["steps"]
    assert steps[0]["reward_margin"] == pytest.approx(0.0, abs=1e-6)  # policy == reference at first
    assert steps[0]["dpo_loss"] == pytest.approx(np.log(2.0), abs=1e-5)
    assert record["final_margin"] > 0.5, record  # beta * (chosen - rejected log-ratio), up from 0
    assert steps[-1]["dpo_loss"] < steps[0]["dpo_loss"] - 0.1
    for key, value in policy.state_dict().items():
        torch.testing.assert_close(value, before[key], rtol=0, atol=0)
    assert policy.training  # not even its mode flag changes
    assert any(not torch.equal(v, before[k]) for k, v in trained.state_dict().items())


def test_the_same_generator_trains_the_same_weights():
    policy = _tiny_policy(1)
    policy.set_normalization(ChunkDataset.from_segments(scripted_segments("flip", 2), 4).statistics())
    config = PreferenceConfig(samples=3, temperature=0.1, noise_scale=(1.0,) * 5, epochs=1, lr=1e-3)
    tasks = _flip_tasks(3, seed=4)
    runs = [
        practise_preference(policy, tasks, ScriptedTries(), config, np.random.default_rng(5)) for _ in (0, 1)
    ]
    assert runs[0][1]["pairs"] > 0
    for key, value in runs[0][0].state_dict().items():
        torch.testing.assert_close(value, runs[1][0].state_dict()[key], rtol=0, atol=0)


def test_head_only_practice_keeps_the_shared_features_and_the_learned_end():
    policy = _tiny_policy(2)
    policy.set_normalization(ChunkDataset.from_segments(scripted_segments("flip", 2), 4).statistics())
    config = PreferenceConfig(samples=3, temperature=0.1, noise_scale=(1.0,) * 5, lr=1e-3, head_only=True)
    trained, record = practise_preference(
        policy, _flip_tasks(3, seed=4), ScriptedTries(), config, np.random.default_rng(5)
    )
    assert record["pairs"] > 0
    changed = {k for k, v in trained.state_dict().items() if not torch.equal(v, policy.state_dict()[k])}
    assert changed and all(k.startswith("head.") for k in changed), changed


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="preference.samples=1"):
        PreferenceConfig(samples=1)
    with pytest.raises(ValueError, match="preference.beta"):
        PreferenceConfig(beta=0.0)
    with pytest.raises(ValueError, match="noise kind 'blue'"):
        PreferenceConfig(noise_kind="blue")
    with pytest.raises(ValueError, match="at least one task"):
        practise_preference(_tiny_policy(), [], ScriptedTries(), PreferenceConfig(), np.random.default_rng(0))


@pytest.mark.slow
def test_an_under_trained_flip_clone_learns_from_its_own_tries():
    """Cloned for a few hundred steps, a flip policy rarely flips without noise, though a third
    of its noisy tries do: preferring those over its failures on the same tasks makes its mode
    flip on most of them."""
    torch.manual_seed(0)
    policy = VLAPolicy(policy_config(use_language=False, hidden=64, min_std=0.05, predict_end=True))
    data = ChunkDataset.from_segments(scripted_segments("flip", 12, seed=1), policy.config.chunk)
    BCTrainer(policy, train_config(steps=300, batch_size=128, eval_every=300, valid_fraction=0.0)).fit(data)
    tasks = _flip_tasks(12, seed=11)
    # The whole network: an under-trained clone's shared features are as unfinished as its head.
    config = PreferenceConfig(temperature=0.05, lr=1e-3, bc_weight=0.0, epochs=5, head_only=False)
    with LocalBackend(workers=1) as backend:
        before = evaluate_tasks(policy, tasks, backend).success_rate
        trained, record = practise_preference(policy, tasks, backend, config, np.random.default_rng(0))
        after = evaluate_tasks(trained, tasks, backend).success_rate
    assert record["pairs"] >= 20, record
    assert before <= 0.25 and after >= before + 0.4, (before, after)
    chosen, rejected = record["mode_miss"]["chosen"], record["mode_miss"]["rejected"]
    assert rejected[1] - chosen[1] > rejected[0] - chosen[0]  # the mode, relative to each kind
