"""Rollout backends: where trials run. The explorer talks only to this interface.

- ``run_trials``: open-loop trials (motion primitives, noise plans), each simulated by
  ``mujoco.rollout`` (``explore.open_loop``);
- ``run_policy``: closed-loop episodes of a policy with exploration noise
  (``explore.closed_loop``).

``LocalBackend`` uses every core of this machine: open-loop trials on threads (MuJoCo integrates
with the GIL released, so threads scale), closed-loop episodes on processes (Python steps the
envs and the policy runs batched inference per process). Work is cut into fixed-size chunks
whose composition does not depend on the number of workers, and every trial draws only from its
own seeds, so the same inputs give the same trajectories, bit for bit, for any ``workers``.
A Ray backend for clusters implements the same two methods.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.closed_loop import Policy, PolicyEpisode, run_policy_episodes
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial
from robo_coevolve.scoring import Thresholds
from robo_coevolve.trajectory import Trajectory
from robo_coevolve.worker_processes import process_pool


class RolloutBackend(ABC):
    """Runs batches of trials; results come back in the order of the inputs."""

    @abstractmethod
    def run_trials(self, trials: Sequence[Trial]) -> list[Trajectory]:
        """Open-loop trials."""

    @abstractmethod
    def run_policy(self, policy: Policy, episodes: Sequence[PolicyEpisode]) -> list[Trajectory]:
        """Closed-loop episodes of ``policy``."""

    def close(self) -> None:  # noqa: B027 (optional hook: backends without workers have nothing to do)
        """Release workers."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _chunks(items: Sequence, size: int) -> list[list]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


class LocalBackend(RolloutBackend):
    """Threads for open-loop trials, processes for closed-loop episodes, on this machine.

    Args:
        workers: parallel workers (default: all cores). 1 runs everything in this process.
        chunk_size: open-loop trials per thread task.
        policy_batch: closed-loop episodes stepped together by one worker (one batched policy
            call per step for all of them).
        control_hz: env control rate.
        thresholds: scoring thresholds.
    """

    def __init__(
        self,
        workers: int | None = None,
        chunk_size: int = 4,
        policy_batch: int = 16,
        control_hz: float = 50.0,
        thresholds: Thresholds | dict | None = None,
    ):
        workers = (os.cpu_count() or 1) if workers is None else workers
        if workers < 1:
            raise ValueError(f"workers={workers} must be >= 1")
        if chunk_size < 1 or policy_batch < 1:
            raise ValueError(f"chunk_size={chunk_size} and policy_batch={policy_batch} must be >= 1")
        EggFlipEnv(
            control_hz=control_hz, thresholds=thresholds
        ).close()  # bad settings fail here, not in a worker
        self.workers = workers
        self.chunk_size = chunk_size
        self.policy_batch = policy_batch
        self.control_hz = control_hz
        self.thresholds = thresholds
        self._local = threading.local()
        self._simulators: list[OpenLoopSimulator] = []
        self._lock = threading.Lock()
        self._threads: ThreadPoolExecutor | None = None
        self._processes: Executor | None = None

    # ------------------------------------------------------------------ open loop
    def _simulator(self) -> OpenLoopSimulator:
        sim = getattr(self._local, "simulator", None)
        if sim is None:
            sim = self._local.simulator = OpenLoopSimulator(self.control_hz, self.thresholds)
            with self._lock:
                self._simulators.append(sim)
        return sim

    def _run_chunk(self, trials: list[Trial]) -> list[Trajectory]:
        sim = self._simulator()
        return [sim.run(trial) for trial in trials]

    def run_trials(self, trials: Sequence[Trial]) -> list[Trajectory]:
        chunks = _chunks(trials, self.chunk_size)
        if self.workers == 1:
            results = [self._run_chunk(c) for c in chunks]
        else:
            if self._threads is None:
                self._threads = ThreadPoolExecutor(self.workers, thread_name_prefix="rollout")
            results = list(self._threads.map(self._run_chunk, chunks))
        return [traj for chunk in results for traj in chunk]

    # ------------------------------------------------------------------ closed loop
    def run_policy(self, policy: Policy, episodes: Sequence[PolicyEpisode]) -> list[Trajectory]:
        groups = _chunks(episodes, self.policy_batch)
        if self.workers == 1:
            results = [run_policy_episodes(policy, g, self.control_hz, self.thresholds) for g in groups]
        else:
            if self._processes is None:
                self._processes = process_pool(self.workers)
            futures = [
                self._processes.submit(run_policy_episodes, policy, g, self.control_hz, self.thresholds)
                for g in groups
            ]
            results = [f.result() for f in futures]
        return [traj for group in results for traj in group]

    def close(self) -> None:
        if self._threads is not None:
            self._threads.shutdown()
            self._threads = None
        if self._processes is not None:
            self._processes.shutdown(cancel_futures=True)
            self._processes = None
        with self._lock:
            for sim in self._simulators:
                sim.close()
            self._simulators.clear()
