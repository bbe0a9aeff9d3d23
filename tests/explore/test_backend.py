"""LocalBackend: same seeds, same trials, whatever the number of workers."""

import numpy as np
import pytest

from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.random_policy import RandomMLPPolicy
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import replay


def same(a, b):
    return (
        len(a) == len(b)
        and np.array_equal(a.actions, b.actions)
        and np.array_equal(a.sensors, b.sensors)
        and np.array_equal(a.proprio, b.proprio)
        and a.outcome == b.outcome
    )


def trials(n, seed=0):
    rng = np.random.default_rng(seed)
    tasks = TaskDistribution.for_skill("flip").sample_many(rng, n)
    return [Trial(t, PrimitivePlan(p)) for t, p in zip(tasks, primitives.sample(rng, n), strict=True)]


def test_open_loop_results_do_not_depend_on_workers_or_chunks():
    batch = trials(12)
    with LocalBackend(workers=1) as one, LocalBackend(workers=2, chunk_size=3) as two:
        a, b = one.run_trials(batch), two.run_trials(batch)
        c = two.run_trials(batch[::-1])[::-1]  # other chunk contents, other thread placement
    assert len(a) == len(b) == 12
    assert all(same(x, y) for x, y in zip(a, b, strict=True))
    assert all(same(x, y) for x, y in zip(a, c, strict=True))
    assert len({x.outcome["reason"] for x in a}) > 1  # a real mix of outcomes, not 12 copies


def test_closed_loop_policy_episodes_match_across_process_counts():
    """A random-init policy with pink noise: 1 worker in-process equals 2 worker processes, and
    each episode replays from its initial state and actions."""
    policy = RandomMLPPolicy(seed=3)
    rng = np.random.default_rng(1)
    tasks = TaskDistribution.for_skill("scoop", horizon=0.6).sample_many(rng, 6)
    episodes = [PolicyEpisode(t, NoiseSpec("pink", 0.2), noise_seed=i) for i, t in enumerate(tasks)]
    with LocalBackend(workers=1, policy_batch=4) as one, LocalBackend(workers=2, policy_batch=4) as two:
        a, b = one.run_policy(policy, episodes), two.run_policy(policy, episodes)
    assert all(same(x, y) for x, y in zip(a, b, strict=True))
    assert all(same(x, replay(x)) for x in a)
    assert len({tuple(x.actions[-1]) for x in a}) == 6  # the noise differs per episode
    assert a[0].meta["plan"] == "policy" and a[0].meta["noise"]["seed"] == 0


def test_noise_free_policy_episodes_repeat_and_noise_changes_them():
    policy = RandomMLPPolicy(seed=0)
    task = TaskDistribution.for_skill("flip", horizon=0.4).sample(np.random.default_rng(0))
    with LocalBackend(workers=1) as backend:
        quiet = backend.run_policy(policy, [PolicyEpisode(task), PolicyEpisode(task)])
        noisy = backend.run_policy(policy, [PolicyEpisode(task, NoiseSpec("ou", 0.3), 1)])
    assert same(quiet[0], quiet[1])
    assert not np.array_equal(quiet[0].actions, noisy[0].actions)
    # Without noise the policy moves the command by at most max_delta per step.
    steps = np.abs(np.diff(quiet[0].actions, axis=0))
    assert steps.max() <= policy.max_delta + 1e-6


def test_bad_worker_counts_are_named():
    with pytest.raises(ValueError, match="workers"):
        LocalBackend(workers=0)
    with pytest.raises(ValueError, match="chunk_size"):
        LocalBackend(chunk_size=0)
