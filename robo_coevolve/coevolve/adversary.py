"""TaskAdversary: searches the bounded task parameters for what the current policy fails.

Each round draws ``population`` points of the ``TaskSpace`` unit cube: half uniformly, half as
perturbations of the pool variants the policy does worst on (so the search keeps pushing where it
found failures before; its memory is the pool itself, which resumes with the run). Every point
becomes a task around the node's base task (invalid combinations are skipped) and the policy runs
``episodes`` noise-free episodes on it. The ``proposals`` tasks it failed most (at least
``min_failure`` of their episodes) are returned as candidates.

The adversary is kept honest by the synthesizer: a candidate enters the pool only after the same
physics and solvability checks as any synthesized task (the node's primitives must find a
success), so the adversary cannot win with impossible tasks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robo_coevolve.coevolve.task_pool import TaskPool
from robo_coevolve.coevolve.task_space import TaskSpace
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.task_spec import TaskSpec, TaskSpecError


@dataclass(frozen=True)
class AdversaryRound:
    """What one round did: ``episodes`` run (trials), the failure rate of each tried point, and
    the candidate tasks (most failed first)."""

    episodes: int
    tried: int
    mean_failure: float
    candidates: list[TaskSpec]

    def to_dict(self) -> dict:
        return {
            "episodes": self.episodes,
            "tried": self.tried,
            "mean_failure": self.mean_failure,
            "candidates": len(self.candidates),
        }


@dataclass(frozen=True)
class TaskAdversary:
    """See the module docstring.

    Args:
        population: task points tried per round.
        episodes: noise-free policy episodes per point.
        proposals: most candidates returned per round.
        min_failure: least failure rate of a candidate.
        step: perturbation std around the pool's weakest variants, unit-cube units.
    """

    population: int = 16
    episodes: int = 2
    proposals: int = 2
    min_failure: float = 0.5
    step: float = 0.15

    def __post_init__(self) -> None:
        if self.population < 1 or self.episodes < 1 or self.proposals < 0:
            raise ValueError(
                f"coevolve.adversary needs population >= 1, episodes >= 1 and proposals >= 0, got "
                f"{self.population}, {self.episodes}, {self.proposals}"
            )
        if not 0 <= self.min_failure <= 1 or self.step <= 0:
            raise ValueError(
                f"coevolve.adversary.min_failure={self.min_failure} must be in [0, 1] and "
                f"step={self.step} > 0"
            )

    def search(
        self, policy, pool: TaskPool, space: TaskSpace, backend, rng: np.random.Generator
    ) -> AdversaryRound:
        """One round against ``policy`` (see the module docstring)."""
        base = pool.entries[0].base
        n_near = self.population // 2
        rates = [e.success_rate(last=20) for e in pool.entries]
        order = sorted((r, i) for i, r in enumerate(rates) if r is not None)
        centres = [space.features(pool.entries[i].base) for _, i in order[: max(1, n_near)]] or [
            space.features(base)
        ]
        points = [
            np.clip(centres[j % len(centres)] + rng.normal(0.0, self.step, space.dim), 0.0, 1.0)
            for j in range(n_near)
        ]
        points += list(rng.uniform(0.0, 1.0, size=(self.population - n_near, space.dim)))
        tasks: list[TaskSpec] = []
        for p in points:
            try:
                tasks.append(space.task_at(base, p))
            except TaskSpecError:
                continue
        if not tasks:
            return AdversaryRound(0, 0, 0.0, [])
        episodes = [
            PolicyEpisode(t.replace(seed=int(rng.integers(2**31 - 1))), meta={"source": "adversary"})
            for t in tasks
            for _ in range(self.episodes)
        ]
        trajs = backend.run_policy(policy, episodes)
        failed = np.array([not t.success for t in trajs], np.float64).reshape(len(tasks), self.episodes)
        failure = failed.mean(axis=1)
        best = [int(i) for i in np.argsort(-failure, kind="stable") if failure[i] >= self.min_failure]
        return AdversaryRound(
            episodes=len(trajs),
            tried=len(tasks),
            mean_failure=float(failure.mean()),
            candidates=[tasks[i].replace(seed=0) for i in best[: self.proposals]],
        )
