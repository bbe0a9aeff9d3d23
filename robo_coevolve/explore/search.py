"""Primitive search: from zero demonstrations to reliable successes of a skill.

Each generation, the mixture CEM (``explore.cem``) proposes motion-primitive parameters, every
proposal runs once on a freshly drawn task (egg pose, mass, ... from a ``TaskDistribution``), and
the physics scorer's verdict ranks them: ``score = progress + success * (1 + margin)``, so a
success always beats a failure and, among successes, the one with more room to spare (gentler,
better centred; see ``scoring.progress``) wins. The search stops at its
trial budget or once the best mode's recent success rate reaches ``target``.

Success rates reported per generation are those of the trials actually run (exploration noise
included); ``evaluate_params`` measures a parameter vector on fresh tasks, without noise.

With ``demos``, the answer then *demonstrates* the skill: it runs without noise on that many fresh
tasks, and if it succeeds on at least ``demo_bar`` of them, its successes
(``SearchResult.examples``) are what a library should learn from. The search's own successes are
samples of every mode, many of them lucky draws at the edge of what works, and policies cloned
from a good answer's demonstrations do far better than clones of them. But a clone inherits its
teacher's weaknesses without the samples' variety, so a weaker answer's demonstrations clone
worse than the search's own successes: below the bar, those stay the examples.

Below the bar, ``restarts`` first searches again from fresh seeds, and the answer whose
demonstrations succeed most often wins: one search's answer is a draw, and its demonstrations
are a fair judge of it.

With ``polish`` (``PolishConfig``), the kept answer is then refined by a CEM that scores every
candidate on the same batch of fresh tasks, which single-trial scores cannot do once the modes
mostly succeed; the polished answer replaces it only if it succeeds more often on fresh tasks.

The search, its restarts, selection, demonstrations and polish stay in one module (over 500
lines): each stage hands the next its answer and trial counts, and reads as one procedure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.cem import MixtureCEM
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import Trajectory

log = logging.getLogger(__name__)

SELECT_MARGIN = 0.1  # modes this close to the best after one selection round run a second


def trial_score(outcome: dict) -> float:
    """The search's ranking of one trial: progress, plus 1 + margin for a success."""
    return float(outcome["progress"]) + float(outcome["success"]) * (1.0 + float(outcome["margin"]))


@dataclass
class Generation:
    """What one generation of the search did."""

    index: int
    trials: int  # cumulative
    success_rate: float  # over this generation's trials
    mode_success: list[float]  # per mode, over its own samples (prior samples excluded)
    mean_score: float
    modes: int

    def to_dict(self) -> dict:
        return dict(vars(self))


@dataclass
class SearchResult:
    """The search's history, its answer (the best mode's mean), the modes and the trials worth
    keeping."""

    skill: str
    trials: int
    history: list[Generation]
    best_params: np.ndarray | None
    modes: list[np.ndarray]
    selection: list[float] = field(default_factory=list)  # per mode, success on the selection tasks
    selection_trials: list[int] = field(default_factory=list)  # per mode, how many it ran
    successes: list[Trajectory] = field(default_factory=list)
    last_generation: list[Trajectory] = field(default_factory=list)
    demos: list[Trajectory] = field(default_factory=list)  # the answer on fresh tasks, no noise
    demo_bar: float = 0.95  # least demo success for the demos to be the examples
    searches: list[float | None] = field(default_factory=list)  # each search's demo success, in order
    polish: dict | None = None  # what ``PolishConfig`` did to the answer (None: it did not run)

    @property
    def success_rate(self) -> float:
        """Success rate of the last generation's trials."""
        return self.history[-1].success_rate if self.history else 0.0

    @property
    def demo_success(self) -> float | None:
        """Success rate of the answer's demonstrations (None: none were run)."""
        return float(np.mean([t.success for t in self.demos])) if self.demos else None

    @property
    def demos_meet_bar(self) -> bool:
        """Whether the answer succeeded on at least ``demo_bar`` of its demonstrations (False
        when none ran)."""
        rate = self.demo_success
        return rate is not None and rate >= self.demo_bar

    @property
    def examples(self) -> list[Trajectory]:
        """What a skill library should learn from: the answer's successful demonstrations when it
        succeeded on at least ``demo_bar`` of them, else (none run, or a weaker answer) the
        search's own successes."""
        return [t for t in self.demos if t.success] if self.demos_meet_bar else self.successes

    @property
    def contenders(self) -> dict[str, list[Trajectory]]:
        """The example sets a learner may choose between, by name: the answer's successful
        demonstrations alone when they met ``demo_bar``; below it, the search's own successes and
        the demonstrations' successes, for a closed-loop comparison to decide (the evolution loop
        clones each: below the bar neither is reliably better); the
        search's successes alone when no demonstration ran or succeeded."""
        shown = [t for t in self.demos if t.success]
        if self.demos_meet_bar:
            return {"demonstrations": shown}
        return {"search": self.successes, **({"demonstrations": shown} if shown else {})}


@dataclass(frozen=True)
class PolishConfig:
    """Refine a search's answer where single trials cannot tell candidates apart.

    The search scores every proposal on one task, so once its modes mostly succeed a lucky draw
    and a better motion look alike, and its answers stall there, however long the search runs.
    Polish is a CEM that starts at the answer (one Gaussian of
    spread ``std``, no prior samples) and scores each of ``population`` candidates by its success
    rate on the same ``tasks`` fresh tasks (common random numbers), for ``trials`` trials in all.
    The polished mean then runs beside the answer on ``check`` fresh tasks, the same for both, and
    replaces it only if it succeeds on more of them. Answers whose selection success is at least
    ``below`` are left alone (a scoop at 100% has nothing to gain)."""

    trials: int = 19200
    population: int = 40
    tasks: int = 48
    std: float = 0.05
    min_std: float = 0.01
    elite_frac: float = 0.2
    check: int = 200
    below: float = 0.99

    def __post_init__(self) -> None:
        for name in ("population", "tasks", "check"):
            if getattr(self, name) < 1:
                raise ValueError(f"explore.polish.{name}={getattr(self, name)} must be >= 1")
        if self.trials < self.population * self.tasks:
            raise ValueError(
                f"explore.polish.trials={self.trials} must cover one generation: population x tasks = "
                f"{self.population * self.tasks} (or set explore.polish=null)"
            )
        if not 0 < self.std <= 1 or not 0 < self.min_std <= self.std:
            raise ValueError(
                f"explore.polish needs 0 < min_std <= std <= 1, got {self.min_std} and {self.std}"
            )
        if not 0 < self.elite_frac <= 1:
            raise ValueError(f"explore.polish.elite_frac={self.elite_frac} must be in (0, 1]")
        if not 0 < self.below <= 1:
            raise ValueError(f"explore.polish.below={self.below} must be in (0, 1]")

    @property
    def generations(self) -> int:
        return self.trials // (self.population * self.tasks)


@dataclass(frozen=True)
class SearchConfig:
    """How a skill is searched (``PrimitiveSearch.run``), as the ``explore`` config group sets it
    (the explore job, and the loop in a node's first iteration). The answer then runs without noise
    on ``demos`` fresh tasks; if at least ``demo_bar`` of them succeed, their successes are what is
    refined, else (and with 0) the search's own successes. Below ``demo_bar``, up to ``restarts``
    more searches run from fresh seeds and the best-demonstrating answer is kept."""

    budget: int = 3000
    population: int = 100
    target: float | None = 0.9
    patience: int = 2
    select_trials: int = 50
    demos: int = 300
    demo_bar: float = 0.95
    restarts: int = 2
    cem: dict = field(default_factory=dict)
    polish: PolishConfig | None = field(default_factory=PolishConfig)

    def __post_init__(self) -> None:
        for name in ("budget", "population"):
            if getattr(self, name) < 1:
                raise ValueError(f"explore.{name}={getattr(self, name)} must be >= 1")
        if self.target is not None and not 0 < self.target <= 1:
            raise ValueError(f"explore.target={self.target} must be in (0, 1] or null")
        for name in ("select_trials", "demos", "restarts"):
            if getattr(self, name) < 0:
                raise ValueError(f"explore.{name}={getattr(self, name)} must be >= 0")
        if not 0 <= self.demo_bar <= 1:
            raise ValueError(f"explore.demo_bar={self.demo_bar} must be in [0, 1]")

    def run(
        self,
        search: PrimitiveSearch,
        on_generation: Callable[[Generation, list[Trajectory]], None] | None = None,
        demos: bool = True,
    ) -> SearchResult:
        """``search.run`` with these settings (``demos=False``: no demonstrations, so no restarts)."""
        return search.run(
            self.budget,
            target=self.target,
            patience=self.patience,
            on_generation=on_generation,
            select_trials=self.select_trials,
            demos=self.demos if demos else 0,
            demo_bar=self.demo_bar,
            restarts=self.restarts,
            polish=self.polish,
        )


class PrimitiveSearch:
    """Mixture-CEM search over motion primitives for one skill.

    Args:
        tasks: the distribution each trial's task is drawn from.
        backend: where trials run.
        seed: seeds the task draws and the CEM (same seed, same search, any backend).
        population: trials per generation.
        keep_successes: keep every successful Trajectory (for the refiner); False keeps none.
        **cem: further ``MixtureCEM`` arguments (elite_frac, max_modes, ...).
    """

    def __init__(
        self,
        tasks: TaskDistribution,
        backend: RolloutBackend,
        seed: int = 0,
        population: int = 100,
        keep_successes: bool = True,
        **cem,
    ):
        self.tasks = tasks
        self.backend = backend
        self.rng = np.random.default_rng(seed)
        self._cem_args = (population, cem)
        self.cem = self._new_cem()
        self.keep_successes = keep_successes

    def _new_cem(self) -> MixtureCEM:
        population, cem = self._cem_args
        return MixtureCEM(
            primitives.family(self.tasks.skill).dim(),
            np.random.default_rng(self.rng.integers(2**63)),
            population,
            **cem,
        )

    def run(
        self,
        budget: int,
        target: float | None = None,
        patience: int = 2,
        on_generation: Callable[[Generation, list[Trajectory]], None] | None = None,
        select_trials: int = 0,
        demos: int = 0,
        demo_bar: float = 0.95,
        restarts: int = 0,
        polish: PolishConfig | None = None,
    ) -> SearchResult:
        """Search until ``budget`` trials have run, or until the best mode's success rate has been
        at least ``target`` for ``patience`` generations in a row.

        With ``select_trials`` > 0, the last ``select_trials`` trials per mode of the budget are
        kept back to pick the answer: each mode's mean runs without noise on that many fresh
        tasks, every mode within ``SELECT_MARGIN`` of the best then runs on as many more (beyond
        the budget), and the one that succeeds most often over all its selection tasks wins (a
        validation step, counted in ``trials``): one round of a few dozen tasks cannot rank modes a
        few points apart. Without it, the answer is
        the mode with the best recent success rate during the search, which its exploration
        noise blurs.

        With ``demos`` > 0, the answer then runs without noise on that many fresh tasks (counted
        in ``trials``, beyond the budget): ``SearchResult.demos``, which become its ``examples``
        if at least ``demo_bar`` of them succeed.

        With ``restarts`` > 0 and demonstrations below ``demo_bar``, the search runs again (the
        CEM afresh, from this search's generator, so the same seed gives the same searches), up to
        ``restarts`` more times until one's demonstrations meet the bar. The result is the search
        whose demonstrations succeeded most often (the first on a tie), with ``trials`` counting
        every search and ``searches`` each one's demonstration success.

        With ``polish``, that result's answer is then refined (``PolishConfig``); if the polished answer
        replaces it, it also replaces its mode and runs the demonstrations afresh."""
        if restarts < 0:
            raise ValueError(f"restarts={restarts} must be >= 0")
        result = self._search(budget, target, patience, on_generation, select_trials, demos, demo_bar)
        trials, searches = result.trials, [result.demo_success]
        while demos and not result.demos_meet_bar and len(searches) <= restarts:
            self.cem = self._new_cem()
            again = self._search(budget, target, patience, on_generation, select_trials, demos, demo_bar)
            trials += again.trials
            searches.append(again.demo_success)
            log.info(
                "%s search %d: the answer succeeds on %.0f%% of its demonstrations (best so far %.0f%%)",
                self.tasks.skill,
                len(searches),
                100 * (again.demo_success or 0.0),
                100 * (result.demo_success or 0.0),
            )
            if (again.demo_success or 0.0) > (result.demo_success or 0.0):
                result = again
        result.trials, result.searches = trials, searches
        if polish is not None and result.best_params is not None:
            self._polish(result, polish, demos)
        return result

    def _polish(self, result: SearchResult, polish: PolishConfig, demos: int) -> None:
        """Refine ``result``'s answer in place (see ``PolishConfig``)."""
        answer = result.best_params
        k = int(np.argmin([np.abs(m - answer).max() for m in result.modes]))
        known = result.selection[k] if result.selection else (result.demo_success or 0.0)
        if known >= polish.below:
            result.polish = {"skipped": f"the answer succeeds {100 * known:.0f}% >= below"}
            return
        cem = MixtureCEM(
            len(answer),
            np.random.default_rng(self.rng.integers(2**63)),
            polish.population,
            elite_frac=polish.elite_frac,
            max_modes=1,
            init_std=polish.std,
            min_std=polish.min_std,
            explore_frac=0.0,
        )
        cem.start_from(answer)
        rates, spent = [], 0
        for g in range(polish.generations):
            params, labels = cem.ask()
            tasks = self.tasks.sample_many(self.rng, polish.tasks)
            runs = self.backend.run_trials(
                [Trial(t, PrimitivePlan(p), {"polish": g}) for p in params for t in tasks]
            )
            spent += len(runs)
            rate = _successes(runs, len(params)).mean(axis=1)
            cem.tell(params, labels, rate, rate >= 0.5)
            rates.append(float(rate.mean()))
            log.info(
                "%s polish %d: candidates succeed %.0f%% on %d shared tasks (best %.0f%%)",
                self.tasks.skill,
                g,
                100 * rate.mean(),
                len(tasks),
                100 * rate.max(),
            )
        polished = cem.modes[0].mean.copy()
        tasks = self.tasks.sample_many(self.rng, polish.check)
        runs = self.backend.run_trials(
            [
                Trial(t, PrimitivePlan(p), {"polish_check": i})
                for i, p in enumerate((answer, polished))
                for t in tasks
            ]
        )
        spent += len(runs)
        before, after = _successes(runs, 2).sum(axis=1).tolist()
        adopted = after > before
        log.info(
            "%s polish: on %d fresh tasks the answer succeeds %d times, the polished answer %d (%s)",
            self.tasks.skill,
            len(tasks),
            before,
            after,
            "adopted" if adopted else "kept the answer",
        )
        result.polish = {
            "answer": answer.tolist(),  # before polishing
            "trials": spent,
            "generations": rates,
            "check": [before / len(tasks), after / len(tasks)],
            "adopted": adopted,
        }
        result.trials += spent
        if adopted:
            result.best_params = polished
            result.modes[k] = polished.copy()
            if demos:
                result.demos = self._demonstrate(polished, demos)
                result.trials += len(result.demos)

    def _search(
        self,
        budget: int,
        target: float | None,
        patience: int,
        on_generation: Callable[[Generation, list[Trajectory]], None] | None,
        select_trials: int,
        demos: int,
        demo_bar: float,
    ) -> SearchResult:
        """One search with the current CEM: ``run`` without restarts."""
        if budget < 1:
            raise ValueError(f"budget={budget} must be >= 1 trial")
        for name, value in (("select_trials", select_trials), ("demos", demos)):
            if value < 0:
                raise ValueError(f"{name}={value} must be >= 0")
        if not 0 <= demo_bar <= 1:
            raise ValueError(f"demo_bar={demo_bar} must be in [0, 1]")
        reserve = select_trials * self.cem.max_modes
        if reserve >= budget:
            raise ValueError(
                f"select_trials={select_trials} x max_modes={self.cem.max_modes} leaves nothing of "
                f"budget={budget} for the search"
            )
        history: list[Generation] = []
        successes: list[Trajectory] = []
        trajs: list[Trajectory] = []
        done, streak = 0, 0
        while done < budget - reserve:
            params, labels = self.cem.ask()
            n = min(len(params), budget - reserve - done)
            params, labels = params[:n], labels[:n]
            tasks = self.tasks.sample_many(self.rng, n)
            trials = [
                Trial(task, PrimitivePlan(p), {"generation": self.cem.generation, "mode": int(k)})
                for task, p, k in zip(tasks, params, labels, strict=True)
            ]
            trajs = self.backend.run_trials(trials)
            done += n
            scores = np.array([trial_score(t.outcome) for t in trajs])
            success = np.array([t.success for t in trajs])
            mode_success = [
                float(success[labels == k].mean()) if (labels == k).any() else 0.0
                for k in range(len(self.cem.modes))
            ]
            self.cem.tell(params, labels, scores, success)
            gen = Generation(
                index=len(history),
                trials=done,
                success_rate=float(success.mean()),
                mode_success=mode_success,
                mean_score=float(scores.mean()),
                modes=len(self.cem.modes),
            )
            history.append(gen)
            if self.keep_successes:
                successes.extend(t for t in trajs if t.success)
            log.info(
                "%s generation %d: %d trials, success %.0f%% (modes %s)",
                self.tasks.skill,
                gen.index,
                done,
                100 * gen.success_rate,
                " ".join(f"{100 * s:.0f}%" for s in mode_success) or "-",
            )
            if on_generation is not None:
                on_generation(gen, trajs)
            best = self.cem.best_mode()
            streak = streak + 1 if target is not None and best is not None and best.success >= target else 0
            if streak >= patience:
                break
        modes = [m.mean.copy() for m in self.cem.modes]
        best = self.cem.best_mode()
        best_params = None if best is None else best.mean.copy()
        selection: list[float] = []
        counts: list[int] = []
        if select_trials and modes:
            wins = np.zeros(len(modes))
            counts = [0] * len(modes)
            for first in (True, False):
                rates = wins / np.maximum(counts, 1)
                racing = [
                    k
                    for k in range(len(modes))
                    if first or (len(modes) > 1 and rates[k] >= rates.max() - SELECT_MARGIN)
                ]
                # one batch per round, so every worker is busy
                trials = [
                    Trial(t, PrimitivePlan(modes[k]), {"selection": k})
                    for k in racing
                    for t in self.tasks.sample_many(self.rng, select_trials)
                ]
                runs = self.backend.run_trials(trials)
                done += len(runs)
                for t in runs:
                    k = t.meta["selection"]
                    wins[k] += t.success
                    counts[k] += 1
                if self.keep_successes:
                    successes.extend(t for t in runs if t.success)
            selection = [float(w / c) for w, c in zip(wins, counts, strict=True)]
            best_params = modes[int(np.argmax(selection))].copy()
            log.info(
                "%s selection: modes succeed %s on fresh tasks",
                self.tasks.skill,
                " ".join(f"{100 * r:.0f}% of {n}" for r, n in zip(selection, counts, strict=True)),
            )
        shown: list[Trajectory] = []
        if demos and best_params is not None:
            shown = self._demonstrate(best_params, demos)
            done += len(shown)
        return SearchResult(
            skill=self.tasks.skill,
            trials=done,
            history=history,
            best_params=best_params,
            modes=modes,
            selection=selection,
            selection_trials=counts,
            successes=successes,
            last_generation=trajs,
            demos=shown,
            demo_bar=demo_bar,
        )

    def _demonstrate(self, params: np.ndarray, n: int) -> list[Trajectory]:
        """The answer without noise on ``n`` fresh tasks."""
        tasks = self.tasks.sample_many(self.rng, n)
        shown = self.backend.run_trials(
            [Trial(t, PrimitivePlan(params), {"demonstration": True}) for t in tasks]
        )
        log.info(
            "%s demonstrations: the answer succeeds on %d of %d fresh tasks",
            self.tasks.skill,
            sum(t.success for t in shown),
            len(shown),
        )
        return shown


def _successes(runs: list[Trajectory], rows: int) -> np.ndarray:
    """(rows, len(runs) // rows) successes of trials run row by row (each candidate on every
    shared task)."""
    return np.array([r.success for r in runs], np.float64).reshape(rows, -1)


def evaluate_params(
    params: np.ndarray, tasks: TaskDistribution, backend: RolloutBackend, n: int, seed: int
) -> list[Trajectory]:
    """Run one primitive on ``n`` fresh tasks drawn with ``seed`` (no exploration noise)."""
    rng = np.random.default_rng(seed)
    return backend.run_trials(
        [Trial(t, PrimitivePlan(params), {"evaluation": True}) for t in tasks.sample_many(rng, n)]
    )
