"""The residual head: a fresh one changes no action, it travels in the checkpoint, it reads the
previous steps' proprioception, and a closed-loop episode under practice's exploration records its
decisions."""

import numpy as np
import pytest
import torch

from robo_coevolve.explore.closed_loop import PolicyEpisode, run_policy_episodes
from robo_coevolve.policy import PolicyConfig, PolicyConfigError, VLAPolicy
from robo_coevolve.policy.export import example_observation
from robo_coevolve.policy.residual import ResidualExploration
from robo_coevolve.task_distribution import TaskDistribution

SMALL = dict(use_language=False, hidden=64, predict_end=False)


@pytest.mark.parametrize("history", [0, 3])
def test_a_fresh_residual_leaves_every_action_bit_identical(history):
    torch.manual_seed(0)
    base = VLAPolicy(PolicyConfig(**SMALL)).eval()
    practised = VLAPolicy(base.config)
    practised.load_state_dict(base.state_dict())
    practised.with_residual(0.1, history)
    assert practised.residual is not None and practised.config.residual_scale == 0.1
    obs = example_observation(base, 5, np.random.default_rng(0))
    base.reset(5), practised.reset(5)
    for _ in range(6):  # across a re-plan
        np.testing.assert_array_equal(base.act(obs), practised.act(obs))


def test_the_residual_travels_in_the_checkpoint_and_a_new_stage_drops_it(tmp_path):
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(**SMALL)).with_residual(0.2, history=2)
    with torch.no_grad():
        policy.residual.net[-1].weight.normal_(0.0, 1.0)
    obs = example_observation(policy, 3, np.random.default_rng(1))
    policy.save_pretrained(tmp_path / "p")
    loaded = VLAPolicy.from_pretrained(tmp_path / "p")
    assert loaded.config.residual_scale == 0.2 and loaded.config.residual_history == 2
    np.testing.assert_array_equal(policy.eval().predict_chunk(obs), loaded.predict_chunk(obs))
    without = VLAPolicy.from_pretrained(tmp_path / "p").with_residual(0.0)
    assert without.residual is None and "residual.net.0.weight" not in without.state_dict()
    assert np.abs(without.predict_chunk(obs) - loaded.predict_chunk(obs)).max() > 1e-4
    with pytest.raises(PolicyConfigError, match="residual_scale"):
        PolicyConfig(residual_scale=-0.1)
    with pytest.raises(PolicyConfigError, match="residual_history"):
        PolicyConfig(residual_history=-1)


def test_the_residual_reads_the_previous_steps_proprioception():
    """Each decision's history is the proprio of the ``residual_history`` steps before it, oldest
    first, the episode's first observation standing in for steps before the start."""
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(**SMALL)).with_residual(0.1, history=3)
    rng = np.random.default_rng(2)
    observations = [example_observation(policy, 2, rng) for _ in range(7)]
    policy.exploration = ResidualExploration(np.zeros(policy.executed_dim))
    policy.reset(2)
    policy.start_episodes([1, 2])
    for obs in observations:
        policy.act(obs)
    record = policy.episode_record(1)
    assert record["step"].tolist() == [0, 2, 4, 6]
    for step, seen in zip(record["step"], record["history"], strict=True):
        before = [observations[max(t, 0)]["proprio"][1] for t in range(step - 3, step)]
        expected = (torch.as_tensor(np.stack(before)) - policy.proprio_mean) / policy.proprio_std
        np.testing.assert_allclose(seen, expected.reshape(-1).numpy(), atol=1e-6)
    policy.reset(2)  # a new episode forgets the last one's steps
    policy.start_episodes([1, 2])
    policy.act(observations[5])
    first = policy.episode_record(0)["history"][0].reshape(3, -1)
    np.testing.assert_allclose(first, np.broadcast_to(first[0], first.shape))


def test_an_explored_episode_returns_its_decisions():
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(**SMALL)).with_residual(0.1)
    tasks = TaskDistribution.for_skill("catch").sample_many(np.random.default_rng(0), 2)
    episodes = [PolicyEpisode(t, noise_seed=7 + i) for i, t in enumerate(tasks)]
    policy.exploration = ResidualExploration(np.zeros(policy.executed_dim))
    first = run_policy_episodes(policy, episodes)
    # another batch: episode 1 draws the same noise (batched matmuls may differ in the last bit)
    second = run_policy_episodes(policy, episodes[1:])
    for traj in first:
        d, steps = traj.meta["decisions"], len(traj.actions)
        assert d["step"].tolist() == list(range(0, steps, policy.config.execute))
        assert d["features"].shape == (len(d["step"]), 64) and d["sample"].shape == (len(d["step"]), 10)
        assert np.all(d["sample"] != 0.0)  # a zero residual's mean, plus the drawn noise
    same = first[1].meta["decisions"]["sample"], second[0].meta["decisions"]["sample"]
    np.testing.assert_allclose(*same, atol=1e-5)
    np.testing.assert_allclose(first[1].actions, second[0].actions, atol=1e-5)
    plain = run_policy_episodes(VLAPolicy(policy.config), episodes[:1])[0]
    assert "decisions" not in plain.meta
