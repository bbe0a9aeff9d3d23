"""RayBackend on a local Ray instance: the same trials as LocalBackend, and a dead worker costs
only its in-flight chunks, which run again."""

import os
import shutil
import signal
import sys
import tempfile

import numpy as np
import pytest
from test_backend import same, trials  # tests/explore is on sys.path (rootdir-less test modules)

from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.random_policy import RandomMLPPolicy
from robo_coevolve.task_distribution import TaskDistribution

ray = pytest.importorskip("ray")  # a guard only: the test install (make test) includes the extra

from robo_coevolve.explore.ray_backend import RayBackend  # noqa: E402


@pytest.fixture(scope="module")
def ray_instance():
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # A short path under /tmp: Ray's unix sockets live there, and nothing goes under $HOME.
    temp = tempfile.mkdtemp(prefix="rc_ray_", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
    yield
    ray.shutdown()
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def backend(ray_instance):
    with RayBackend(workers=2, chunk_size=2, policy_batch=2) as b:
        yield b


@pytest.fixture(scope="module")
def batch_and_local():
    batch = trials(12)
    with LocalBackend(workers=1, chunk_size=2) as local:
        return batch, local.run_trials(batch)


def test_open_loop_trials_match_the_local_backend(backend, batch_and_local):
    batch, expected = batch_and_local
    got = backend.run_trials(batch)
    assert len(got) == 12 and all(same(x, y) for x, y in zip(got, expected, strict=True))
    assert len({x.outcome["reason"] for x in got}) > 1  # a real mix of outcomes
    assert len(set(backend.worker_pids())) == 2 and os.getpid() not in backend.worker_pids()


def test_killing_a_worker_mid_batch_still_completes_the_batch(backend, batch_and_local):
    batch, expected = batch_and_local
    killed: list[int] = []

    def kill_a_busy_worker(b: RayBackend) -> None:
        busy = [s for s in b.busy_workers() if b.worker_pids()[s] > 0]
        if not killed and busy:
            pid = b.worker_pids()[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    replaced, resubmitted = backend.replaced, backend.resubmitted
    backend.after_chunk = kill_a_busy_worker
    try:
        got = backend.run_trials(batch)
    finally:
        backend.after_chunk = None
    assert len(killed) == 1  # the kill happened while that worker held chunks
    assert backend.replaced == replaced + 1 and backend.resubmitted > resubmitted
    assert all(same(x, y) for x, y in zip(got, expected, strict=True))
    # The replacement works like any other worker.
    assert all(same(x, y) for x, y in zip(backend.run_trials(batch[:4]), expected[:4], strict=True))


def test_policy_episodes_match_and_each_call_sends_its_own_weights(backend):
    rng = np.random.default_rng(1)
    tasks = TaskDistribution.for_skill("scoop", horizon=0.4).sample_many(rng, 4)
    episodes = [PolicyEpisode(t, NoiseSpec("pink", 0.2), noise_seed=i) for i, t in enumerate(tasks)]
    first, second = RandomMLPPolicy(seed=3), RandomMLPPolicy(seed=4)
    with LocalBackend(workers=1, policy_batch=2) as local:
        expected = [local.run_policy(p, episodes) for p in (first, second)]
    got = [backend.run_policy(p, episodes) for p in (first, second)]
    for g, e in zip(got, expected, strict=True):
        assert all(same(x, y) for x, y in zip(g, e, strict=True))
    # The workers did not keep the first call's policy for the second.
    assert not np.array_equal(got[0][0].actions, got[1][0].actions)


def test_a_missing_ray_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ImportError, match=r"robo_coevolve\[ray\]"):
        RayBackend(workers=1)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="workers"):
        RayBackend(workers=0)
    with pytest.raises(ValueError, match="max_retries"):
        RayBackend(max_retries=-1)
