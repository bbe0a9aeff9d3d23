"""AnswerSearch: a search of its own on the task variant no motion solves, and its answer
adopted by the node when it solves that variant without losing the node's own tasks.

A variant's own search (``PoolEntry.own_mode``) refines the node's motions a few trials at a
time, so a motion far from all of them stays out of its reach: the answer of a search on the
heaviest eggs lies far from every mode of a run, and solves the lighter variants too. Which
motion demonstrates is what the policy learns, so a clone of that answer's demonstrations does
the hard variants where a clone of the standard answer's does not.

One round (``AnswerSearch.run``), at most ``max_searches`` per pool and once per variant:

1. **target**: the variant whose primitive trials (around the node's modes and from its own
   search, each arm drawn by Thompson sampling, so mostly the best arm's) succeeded least
   often, under ``bar``, with at least ``min_trials`` of them. (The best arm's own rate, tried
   first, let a 78 g variant escape at 1 success in 5 own trials, 0 in 15 around the modes);
2. **search**: a ``PrimitiveSearch`` (mixture CEM from scratch) of ``trials`` on its distribution,
   its answer picked on ``select_trials`` fresh tasks per mode;
3. **check**: that answer and the node's run without noise on the same ``check`` fresh tasks of
   the node's own distribution and of the variant. It is **adopted** if it solves the variant
   more often and the node's own tasks at most ``margin`` less often;
4. **demonstrations**: an adopted answer runs on ``demos`` fresh tasks drawn from the pool by
   weight; its successes are the iteration's examples (the caller clones them, in competition
   with what exploration found).

Every trial counts in the iteration's trials.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_coevolve.coevolve.task_pool import TaskPool
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass
class AnswerRound:
    """What one ``AnswerSearch.run`` did. ``rates`` are the check's success rates, ``{"node":
    {"own": .., "variant": ..}, "answer": {...}}``; ``examples`` the successes of an adopted
    answer's demonstrations."""

    target: int
    trials: int
    search_success: float
    params: list[float] | None
    rates: dict[str, dict[str, float]] = field(default_factory=dict)
    adopted: bool = False
    demos: int = 0
    examples: list[Trajectory] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k not in ("examples", "params")}
        return {**out, "examples": len(self.examples)}


@dataclass(frozen=True)
class AnswerSearch:
    """A search of its own on the variant no motion solves (module docstring).

    Args:
        trials: the search's budget.
        population: trials per CEM generation.
        select_trials: fresh tasks per mode that pick the search's answer (inside ``trials``).
        bar: a variant is a target while less than this share of its primitive trials succeeded.
        min_trials: least primitive trials on a variant before it can be a target.
        check: fresh tasks of the node's distribution, and as many of the variant, each answer
            runs on to compare them.
        margin: how much less often than the node's answer the new one may solve the node's tasks.
        demos: fresh pool tasks an adopted answer demonstrates on.
        max_searches: most searches per pool.
        max_modes: the search's ``MixtureCEM.max_modes``.
    """

    trials: int = 400
    population: int = 50
    select_trials: int = 20
    bar: float = 0.2
    min_trials: int = 8
    check: int = 40
    margin: float = 0.05
    demos: int = 150
    max_searches: int = 2
    max_modes: int = 3

    def __post_init__(self) -> None:
        checks = {
            "trials": (self.trials > self.select_trials * self.max_modes, "> select_trials x max_modes"),
            "population": (self.population >= 2 * self.max_modes, ">= 2 x max_modes"),
            "select_trials": (self.select_trials >= 0, ">= 0"),
            "bar": (0 < self.bar <= 1, "in (0, 1]"),
            "min_trials": (self.min_trials >= 1, ">= 1"),
            "check": (self.check >= 1, ">= 1"),
            "margin": (0 <= self.margin < 1, "in [0, 1)"),
            "demos": (self.demos >= 1, ">= 1"),
            "max_searches": (self.max_searches >= 0, ">= 0"),
            "max_modes": (self.max_modes >= 1, ">= 1"),
        }
        for name, (ok, allowed) in checks.items():
            if not ok:
                raise ValueError(f"coevolve.answer.{name}={getattr(self, name)!r}: must be {allowed}")

    def target(self, pool: TaskPool) -> int | None:
        """The variant to search on (module docstring, step 1), or None."""
        if len(pool.searched) >= self.max_searches:
            return None
        best: tuple[float, int] | None = None
        for i, e in enumerate(pool.entries):
            if i in pool.searched or len(e.mode_outcomes) < self.min_trials:
                continue
            rate = float(np.mean([s for _, _, s in e.mode_outcomes]))
            if rate < self.bar and (best is None or rate < best[0]):
                best = (rate, i)
        return None if best is None else best[1]

    def adopts(self, node: dict[str, float], new: dict[str, float]) -> bool:
        """Whether an answer with check rates ``new`` replaces the node's, with ``node``
        (``{"own": .., "variant": ..}``): it solves the variant more often, and the node's own
        tasks at most ``margin`` less often."""
        return new["variant"] > node["variant"] and new["own"] >= node["own"] - self.margin

    def run(
        self,
        pool: TaskPool,
        node_tasks: TaskDistribution,
        node_answer: np.ndarray,
        backend,
        rng: np.random.Generator,
    ) -> AnswerRound | None:
        """One round on ``pool`` (marks the target searched); ``node_answer`` is the node's
        answer (unit-cube parameters). None when no variant is a target."""
        index = self.target(pool)
        if index is None:
            return None
        pool.searched.append(index)
        variant = pool.entries[index].tasks
        result = PrimitiveSearch(
            variant,
            backend,
            seed=int(rng.integers(2**31)),
            population=self.population,
            keep_successes=False,
            max_modes=self.max_modes,
        ).run(self.trials, select_trials=self.select_trials)
        out = AnswerRound(
            target=index,
            trials=result.trials,
            search_success=round(result.success_rate, 4),
            params=None if result.best_params is None else [float(v) for v in result.best_params],
        )
        if result.best_params is None:
            return out
        # Both answers on the same fresh tasks of each set.
        sets = {
            "own": node_tasks.sample_many(rng, self.check),
            "variant": variant.sample_many(rng, self.check),
        }
        for name, params in (("node", node_answer), ("answer", result.best_params)):
            trials = [Trial(t, PrimitivePlan(params), {"check": k}) for k, ts in sets.items() for t in ts]
            runs = backend.run_trials(trials)
            out.trials += len(runs)
            out.rates[name] = {
                k: round(float(np.mean([t.success for t in runs if t.meta["check"] == k])), 4) for k in sets
            }
        node, new = out.rates["node"], out.rates["answer"]
        out.adopted = self.adopts(node, new)
        log.info(
            "answer search on variant %d (%d trials): node's answer %s, this one %s%s",
            index,
            result.trials,
            node,
            new,
            ": adopted" if out.adopted else "",
        )
        if out.adopted:
            tasks, _ = pool.sample(rng, self.demos)
            shown = backend.run_trials(
                [Trial(t, PrimitivePlan(result.best_params), {"source": "answer"}) for t in tasks]
            )
            out.trials += len(shown)
            out.demos = len(shown)
            out.examples = [t for t in shown if t.success]
        return out
