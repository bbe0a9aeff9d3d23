"""A Ray backend for the rollout interface: the same trials as ``LocalBackend``, on a cluster.

Exploration is embarrassingly parallel and its unit of work (a chunk of trials, a group of policy
episodes) is milliseconds to seconds of CPU, so what matters at scale is keeping every core fed
and surviving the loss of a node; Ray gives both without us running a scheduler. Each worker is a
Ray actor that builds its own MuJoCo models once (a model cannot be shipped, and rebuilding it per
task would cost more than the trial) and caches the policy of the current ``run_policy`` call,
whose weights go into the object store once per call rather than once per task. Work is cut into
exactly the chunks ``LocalBackend`` cuts, and every chunk's result depends only on its contents,
so the two backends give the same trajectories bit for bit, and a chunk whose actor dies can
simply run again on a replacement. Results stream back as chunks finish (``ray.wait``) and each
freed actor gets the next chunk at once. Ray is imported only when this backend is built, so it
stays an optional extra.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import RolloutBackend, _chunks
from robo_coevolve.explore.closed_loop import Policy, PolicyEpisode, run_policy_episodes
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial
from robo_coevolve.scoring import Thresholds
from robo_coevolve.trajectory import Trajectory

INSTALL_HINT = "pip install 'robo_coevolve[ray]'"


def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError(
            f"RayBackend needs Ray, which is not installed ({e}); install it with: {INSTALL_HINT}"
        ) from None
    return ray


class _RolloutWorker:
    """The body of one Ray actor: its own simulator, and the policy of the current call."""

    def __init__(self, control_hz: float, thresholds: Thresholds | dict | None):
        self.control_hz = control_hz
        self.thresholds = thresholds
        self.simulator = OpenLoopSimulator(control_hz, thresholds)
        self._policy_key: int | None = None
        self._policy: Policy | None = None

    def pid(self) -> int:
        return os.getpid()

    def run_trials(self, trials: list[Trial]) -> list[Trajectory]:
        return [self.simulator.run(trial) for trial in trials]

    def run_policy(self, key: int, policy_box: list, episodes: list[PolicyEpisode]) -> list[Trajectory]:
        # The reference comes boxed in a list so that Ray does not resolve it per task: the policy
        # is fetched and unpickled once per run_policy call and actor, not once per chunk.
        if key != self._policy_key:
            import ray

            self._policy, self._policy_key = ray.get(policy_box[0]), key
        return run_policy_episodes(self._policy, episodes, self.control_hz, self.thresholds)


class RayBackend(RolloutBackend):
    """Open-loop trials and closed-loop episodes on Ray actors, with the chunking of ``LocalBackend``.

    Args:
        workers: actors (default: one per CPU of the Ray cluster).
        chunk_size: open-loop trials per task (as in ``LocalBackend``: the same value gives the
            same trajectories).
        policy_batch: closed-loop episodes stepped together by one task.
        control_hz: env control rate.
        thresholds: scoring thresholds.
        address: the Ray cluster. ``None`` joins the instance this process already started, or
            starts a local one; ``"auto"`` joins the cluster this machine belongs to; an address
            such as ``"ray://head:10001"`` connects through Ray Client.
        num_cpus: CPUs of a local instance started here (default: all cores).
        temp_dir: session directory of a local instance started here (Ray's default is under /tmp).
        runtime_env: Ray runtime environment for the workers, e.g. ``{"py_modules": [...]}``
            when the cluster's nodes do not have this package installed.
        in_flight_per_worker: tasks queued on each actor, so a worker never waits for the driver.
        max_retries: re-runs of one chunk after its actor died before the batch fails.
    """

    def __init__(
        self,
        workers: int | None = None,
        chunk_size: int = 4,
        policy_batch: int = 16,
        control_hz: float = 50.0,
        thresholds: Thresholds | dict | None = None,
        address: str | None = None,
        num_cpus: int | None = None,
        temp_dir: str | None = None,
        runtime_env: dict | None = None,
        in_flight_per_worker: int = 2,
        max_retries: int = 3,
    ):
        if workers is not None and workers < 1:
            raise ValueError(f"workers={workers} must be >= 1")
        if chunk_size < 1 or policy_batch < 1:
            raise ValueError(f"chunk_size={chunk_size} and policy_batch={policy_batch} must be >= 1")
        if in_flight_per_worker < 1 or max_retries < 0:
            raise ValueError(
                f"in_flight_per_worker={in_flight_per_worker} must be >= 1 and max_retries={max_retries} >= 0"
            )
        EggFlipEnv(control_hz=control_hz, thresholds=thresholds).close()  # bad settings fail here
        self._ray = _import_ray()
        self.chunk_size = chunk_size
        self.policy_batch = policy_batch
        self.control_hz = control_hz
        self.thresholds = thresholds
        self.in_flight_per_worker = in_flight_per_worker
        self.max_retries = max_retries
        self._owns_ray = False
        if not self._ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "runtime_env": runtime_env}
            if address is None:
                # A private instance on this machine: no token to fetch from the home directory.
                os.environ.setdefault("RAY_AUTH_MODE", "disabled")
                kwargs.update(num_cpus=num_cpus, _temp_dir=temp_dir)
            else:
                kwargs["address"] = address
            self._ray.init(**{k: v for k, v in kwargs.items() if v is not None})
            self._owns_ray = True
        self.workers = workers or max(1, int(self._ray.cluster_resources().get("CPU", 1)))
        self._actor_class = self._ray.remote(num_cpus=1, max_restarts=0)(_RolloutWorker)
        self._actors: list = []
        self._pids: list[int] = []
        self._policy_keys = itertools.count()
        self.replaced = 0  # actors that died and were replaced
        self.resubmitted = 0  # chunks re-run because their actor died
        # Called after every chunk that comes back (tests use it to kill a worker mid-batch).
        self.after_chunk: Callable[[RayBackend], None] | None = None
        self._in_flight: dict = {}

    # ------------------------------------------------------------------ actors
    def _start(self, count: int) -> list:
        return [self._actor_class.remote(self.control_hz, self.thresholds) for _ in range(count)]

    def _ensure_actors(self) -> None:
        if not self._actors:
            self._actors = self._start(self.workers)
            self._pids = self._ray.get([a.pid.remote() for a in self._actors])

    def _replace(self, slot: int) -> None:
        self._ray.kill(self._actors[slot], no_restart=True)
        (self._actors[slot],) = self._start(1)
        self._pids[slot] = -1  # known once it answers; a kill test only targets started actors
        self.replaced += 1

    def worker_pids(self) -> list[int]:
        """Process ids of the current actors (-1 for a replacement not yet asked)."""
        return list(self._pids)

    def busy_workers(self) -> list[int]:
        """Slots of the actors that hold chunks in flight right now."""
        return sorted({slot for _, slot in self._in_flight.values()})

    # ------------------------------------------------------------------ dispatch
    def _map(self, method: str, chunks: list[list], *args) -> list[list]:
        """Every chunk through ``method`` of some actor; results in chunk order."""
        ray = self._ray
        self._ensure_actors()
        results: list = [None] * len(chunks)
        attempts = [0] * len(chunks)
        pending = deque(range(len(chunks)))
        load = [0] * len(self._actors)
        self._in_flight = in_flight = {}

        def fill() -> None:
            for slot in itertools.cycle(range(len(self._actors))):
                if not pending or min(load) >= self.in_flight_per_worker:
                    return
                if load[slot] < self.in_flight_per_worker:
                    i = pending.popleft()
                    ref = getattr(self._actors[slot], method).remote(*args, chunks[i])
                    in_flight[ref] = (i, slot)
                    load[slot] += 1

        fill()
        while in_flight:
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            i, slot = in_flight.pop(ref)
            load[slot] -= 1
            try:
                results[i] = ray.get(ref)
            except ray.exceptions.RayActorError:
                # The actor is gone, and with it every chunk it held: run them again elsewhere.
                held = [r for r, (_, s) in in_flight.items() if s == slot]
                lost = [i] + [in_flight.pop(r)[0] for r in held]
                for j in lost:
                    attempts[j] += 1
                    if attempts[j] > self.max_retries:
                        raise RuntimeError(
                            f"RayBackend: chunk {j} lost its worker {attempts[j]} times; giving up"
                        ) from None
                pending.extendleft(reversed(lost))
                self.resubmitted += len(lost)
                load[slot] = 0
                self._replace(slot)
            except ray.exceptions.RayTaskError as e:
                raise e.as_instanceof_cause() from None
            fill()
            if self.after_chunk is not None:
                self.after_chunk(self)
        self._in_flight = {}
        return results

    def run_trials(self, trials: Sequence[Trial]) -> list[Trajectory]:
        chunks = _chunks(trials, self.chunk_size)
        return [traj for chunk in self._map("run_trials", chunks) for traj in chunk]

    def run_policy(self, policy: Policy, episodes: Sequence[PolicyEpisode]) -> list[Trajectory]:
        groups = _chunks(episodes, self.policy_batch)
        box = [self._ray.put(policy)]  # the weights, once per call, for every actor
        results = self._map("run_policy", groups, next(self._policy_keys), box)
        return [traj for group in results for traj in group]

    def close(self) -> None:
        for actor in self._actors:
            self._ray.kill(actor, no_restart=True)
        self._actors, self._pids = [], []
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_ray = False
