"""Closed-loop evaluation: a policy's success rate over seeded tasks, batched across workers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


@dataclass
class EvalResult:
    """Success over ``n`` episodes, the failure reasons, and the episodes themselves."""

    skill: str
    instruction: str
    n: int
    success_rate: float
    reasons: dict[str, int]
    trajectories: list[Trajectory] = field(default_factory=list, repr=False)

    def summary(self) -> dict:
        return {k: v for k, v in vars(self).items() if k != "trajectories"}


def evaluate_policy(
    policy,
    tasks: TaskDistribution,
    backend: RolloutBackend,
    n: int = 100,
    seed: int = 10_000,
    instruction: str | None = None,
) -> EvalResult:
    """Run ``policy`` without exploration noise on ``n`` tasks drawn from ``tasks`` with ``seed``
    (held out from training by using seeds the explorer does not); ``instruction`` overrides the
    tasks' own (to measure whether the instruction steers the policy)."""
    if n < 1:
        raise ValueError(f"evaluation needs n >= 1 episodes, got {n}")
    drawn = tasks.sample_many(np.random.default_rng(seed), n)
    if instruction is not None:
        drawn = [t.replace(instruction=instruction) for t in drawn]
    return evaluate_tasks(policy, drawn, backend)


def evaluate_tasks(policy, tasks: Sequence[TaskSpec], backend: RolloutBackend) -> EvalResult:
    """Run ``policy`` without exploration noise once on each of ``tasks`` (of one skill)."""
    if not tasks:
        raise ValueError("evaluation needs at least one task")
    trajs = backend.run_policy(policy, [PolicyEpisode(t, meta={"evaluation": True}) for t in tasks])
    return EvalResult(
        skill=tasks[0].skill,
        instruction=tasks[0].instruction,
        n=len(tasks),
        success_rate=float(np.mean([t.success for t in trajs])),
        reasons=dict(Counter(t.outcome["reason"] for t in trajs)),
        trajectories=trajs,
    )
