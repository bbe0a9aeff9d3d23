"""Closed-loop episodes: exploration noise perturbs the policy's motion without steering it."""

import numpy as np

from robo_coevolve.action_space import command_as_action, with_command
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.closed_loop import PolicyEpisode, run_policy_episodes
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.task_distribution import TaskDistribution


class HoldCommand:
    """Asks for its previous command again every step (a delta policy that predicts no change);
    from step ``hold_from`` on it reports that its motion is over (``holding``)."""

    privileged = False
    image_size = None

    def __init__(self, hold_from: int | None = None):
        self.hold_from = hold_from
        self.seen: list[np.ndarray] = []  # the command shown, which is also the one it asks for

    def reset(self, batch: int) -> None:
        self.steps, self.batch = 0, batch

    @property
    def holding(self) -> np.ndarray:
        return np.full(self.batch, self.hold_from is not None and self.steps > self.hold_from)

    def act(self, obs: dict) -> np.ndarray:
        command = command_as_action(obs["proprio"])  # (B, 5): one episode here
        self.seen.append(command[0])
        self.steps += 1
        return command


def one_episode(policy, noise: NoiseSpec | None, seed: int = 3):
    task = TaskDistribution.for_skill("scoop").sample(np.random.default_rng(0))
    (traj,) = run_policy_episodes(policy, [PolicyEpisode(task, noise, seed)])
    horizon = EggFlipEnv(task=task).horizon_steps
    return traj, (None if noise is None else noise.sample(np.random.default_rng(seed), horizon))


def test_with_command_inverts_command_as_action():
    proprio = np.random.default_rng(0).uniform(-0.5, 0.5, (4, 15)).astype(np.float32)
    action = np.random.default_rng(1).uniform(-1, 1, (4, 5))
    out = with_command(proprio, action)
    np.testing.assert_allclose(command_as_action(out), action, atol=1e-5)
    np.testing.assert_array_equal(out[:, :10], proprio[:, :10])


def test_noise_is_an_offset_around_the_policys_commands_not_a_random_walk():
    policy = HoldCommand()
    traj, noise = one_episode(policy, NoiseSpec("pink", 0.05))
    start = policy.seen[0]
    executed = np.asarray(traj.actions, np.float64)
    # The policy keeps asking for its first command, and is shown that command, not the noisy one
    # the env executed: a policy predicting changes of its previous command would otherwise walk
    # off with the sum of the noise.
    np.testing.assert_allclose(np.asarray(policy.seen), start[None].repeat(len(policy.seen), 0), atol=1e-5)
    expected = np.clip(start + noise[: len(executed)], -1.0, 1.0)
    np.testing.assert_allclose(executed, expected, atol=1e-5)
    walk = np.clip(start + np.cumsum(noise[: len(executed)], axis=0), -1.0, 1.0)
    assert np.abs(walk - executed).max() > 0.1  # the old behaviour would have been told apart
    # The trajectory records what the env executed: its commands are the noisy actions.
    np.testing.assert_allclose(command_as_action(traj.proprio[1:]), executed, atol=1e-5)


def test_an_episode_the_policy_holds_runs_without_noise():
    policy = HoldCommand(hold_from=40)
    traj, noise = one_episode(policy, NoiseSpec("pink", 0.05))
    executed = np.asarray(traj.actions, np.float64)
    start = policy.seen[0]
    np.testing.assert_allclose(executed[:40], np.clip(start + noise[:40], -1, 1), atol=1e-5)
    assert np.abs(executed[:40] - start).max() > 0.01
    np.testing.assert_allclose(executed[40:], start[None].repeat(len(executed) - 40, 0), atol=1e-5)


def test_noise_free_episodes_show_the_policy_the_env_as_it_is():
    policy = HoldCommand()
    traj, _ = one_episode(policy, None)
    np.testing.assert_allclose(np.asarray(policy.seen), command_as_action(traj.proprio[:-1]), atol=1e-6)
