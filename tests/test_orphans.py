"""A job killed with SIGKILL takes its worker processes with it: the LocalBackend's and
fit_clones' pool workers, multiprocessing's forkserver and its resource tracker."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

# A job with both kinds of pool at work: LocalBackend's two workers (started by one closed-loop
# batch) and two behaviour clones training in fit_clones' pool for far longer than the test.
JOB = """
import numpy as np
import torch
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.random_policy import RandomMLPPolicy
from robo_coevolve.learn import ChunkDataset, CloneJob, TrainConfig, fit_clones
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.segment import Segment
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec

rng = np.random.default_rng(0)
backend = LocalBackend(workers=2, policy_batch=1)
tasks = TaskDistribution.for_skill("scoop", horizon=0.1).sample_many(rng, 2)
backend.run_policy(RandomMLPPolicy(seed=0), [PolicyEpisode(t) for t in tasks])
t = 40
segment = Segment(
    task=TaskSpec.for_skill("scoop"), control_hz=50.0, states=rng.normal(size=(t + 1, 30)),
    disturbance=None, actions=rng.normal(size=(t, 5)).astype(np.float32),
    proprio=rng.normal(size=(t + 1, 15)).astype(np.float32),
    egg=rng.normal(size=(t + 1, 13)).astype(np.float32), sensors=rng.normal(size=(t, 4)),
    outcome={}, meta={},
)
config = PolicyConfig(use_image=False, use_egg_state=True, hidden=16)
data = ChunkDataset.from_segments([segment] * 2, config.chunk)
train = TrainConfig(steps=10**8, batch_size=8, eval_every=10**8, progress=False)
print("training", flush=True)
fit_clones([CloneJob(VLAPolicy(config), torch.get_rng_state(), train, data) for _ in range(2)], workers=2)
"""
# the resource tracker, the forkserver, two backend workers and two clone workers
DESCENDANTS = 6


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE  # a dead orphan whose reaper is slow
    except psutil.NoSuchProcess:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers end with the job on Linux")
def test_sigkilled_job_leaves_no_worker_processes():
    job = subprocess.Popen([sys.executable, "-c", JOB], stdout=subprocess.PIPE, text=True)
    try:
        assert job.stdout.readline() == "training\n"
        deadline = time.monotonic() + 60
        descendants = []
        while len(descendants) < DESCENDANTS and time.monotonic() < deadline:
            time.sleep(0.2)
            descendants = psutil.Process(job.pid).children(recursive=True)
        assert len(descendants) == DESCENDANTS, [p.cmdline()[-1][:60] for p in descendants]
        time.sleep(0.5)  # mid-work: every clone worker is training
    finally:
        os.kill(job.pid, signal.SIGKILL)
        job.wait()
        job.stdout.close()
    deadline = time.monotonic() + 10
    while any(map(alive, descendants)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [(p.pid, " ".join(p.cmdline())[-80:]) for p in descendants if alive(p)]
    for pid, _ in left:  # leave no orphans behind for the next test either
        os.kill(pid, signal.SIGKILL)
    assert not left, left
