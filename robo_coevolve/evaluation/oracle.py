"""The re-planning oracle: the primitive search re-run on each perturbed task itself.

A task's perturbation is a function of its TaskSpec (its seed included), so the simulator
"knows" it: a search scored on that very task finds an open-loop plan with foresight of the push,
the friction, the latency. Per task, a small mixture CEM (``explore.cem``) starts at the node's
answer and modes, every candidate runs on the task, and the oracle succeeds if any plan does (a
success outranks every failure in the search's score). It bounds what an open-loop motion can
recover from each perturbation, so a target can be set per family. It cannot see either: an
observation perturbation leaves it as it is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.cem import MixtureCEM
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import trial_score
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


def replan(
    tasks: Sequence[TaskSpec],
    starts: Sequence[np.ndarray],
    backend: RolloutBackend,
    trials: int,
    seed: int | Sequence[int],
    population: int = 12,
    spread: float = 0.1,
) -> list[Trajectory]:
    """Per task, the best trial of a search on that task: first the ``starts`` themselves (the
    node's answer, then its modes: at most ``trials``), then CEM generations of ``population``
    around them (initial spread ``spread`` in the unit cube) until a plan succeeds or ``trials``
    trials have run on the task. Every task's generation runs in one batch; ``seed`` seeds them."""
    if trials < 1:
        raise ValueError(f"the oracle needs at least 1 trial per task, got {trials}")
    starts = [np.asarray(s, dtype=np.float64) for s in starts][:trials]
    if not starts:
        raise ValueError("the oracle needs at least one start (the node's answer)")
    rngs = [np.random.default_rng([*np.ravel(seed).tolist(), i]) for i in range(len(tasks))]
    modes = min(len(starts), population // 2)
    cems = [
        MixtureCEM(len(starts[0]), rng, population, max_modes=modes, init_std=spread, explore_frac=0.0)
        for rng in rngs
    ]
    for cem in cems:
        cem.start_from(np.stack(starts[:modes]))
    best: list[Trajectory | None] = [None] * len(tasks)
    spent = [0] * len(tasks)

    def keep(i: int, runs: list[Trajectory]) -> None:
        for t in runs:
            if best[i] is None or trial_score(t.outcome) > trial_score(best[i].outcome):
                best[i] = t
        spent[i] += len(runs)

    runs = backend.run_trials([Trial(t, PrimitivePlan(p), {"oracle": 0}) for t in tasks for p in starts])
    for i in range(len(tasks)):
        keep(i, runs[i * len(starts) : (i + 1) * len(starts)])
    generation = 1
    while True:
        open_ = [i for i in range(len(tasks)) if not best[i].success and spent[i] < trials]
        if not open_:
            break
        asked = {}
        for i in open_:
            params, labels = cems[i].ask()
            n = min(len(params), trials - spent[i])
            asked[i] = (params[:n], labels[:n])
        batch = [
            Trial(tasks[i], PrimitivePlan(p), {"oracle": generation}) for i in open_ for p in asked[i][0]
        ]
        runs = backend.run_trials(batch)
        at = 0
        for i in open_:
            params, labels = asked[i]
            mine = runs[at : at + len(params)]
            at += len(params)
            keep(i, mine)
            scores = np.array([trial_score(t.outcome) for t in mine])
            if len(params) == cems[i].population:  # a cut generation would refit on a subset
                cems[i].tell(params, labels, scores, np.array([t.success for t in mine]))
        generation += 1
    return best
