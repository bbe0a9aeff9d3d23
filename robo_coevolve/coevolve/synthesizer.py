"""TaskSynthesizer: new task variants near the weak spots, validated in the simulator.

One ``evolve`` round over a ``TaskPool``:

1. **signals** per variant (``signals.weakness``): forgetting, boundary and deficit (below the
   whole pool's recent success rate) from its outcomes, rarity of its point in the ``TaskSpace``
   among the points trials visited;
2. **proposals**: the rarest one-parameter steps from the variants (the least visited points
   one parameter of one variant ``rare_step`` away), validated first; then, for the weakest
   variants, perturbations of their parameters (Gaussian steps in the unit cube, clipped to the
   space's bounds);
3. **validation**, in order, each candidate stopping at the first failure:
   - the TaskSpec itself (``TaskSpecError``: e.g. an egg off the pan) -> rejected;
   - ``check_physics`` (penetration, non-finite state, an egg that will not stay put) -> rejected;
   - **solvability**: ``solve_trials`` primitive trials around the node's known modes, every
     other one from the candidate's own search (``PoolEntry.own_mode``: its best trials so far,
     or before it has 8, its parent variant's); at least one success admits it, else it is set
     aside with its trials' scores and retried in later rounds (``max_retries`` tries in all),
     when the modes have moved on and its own search has more to go on;
   - **too easy**: the trials around the node's modes succeed more than ``too_easy`` of the
     time -> rejected (its trials still count);
4. **weights**: every variant gets ``floor + weakness``; a variant mastered recently (success
   >= ``mastered`` over its last iteration) gets ``floor``; the node's own distribution (entry 0)
   keeps at least ``seed_share`` of the sampling mass, so the standard tasks are never starved.

The successes of the solvability trials are real trials on the new variants: ``evolve`` returns
them, for the caller to refine like any other success. ``promote`` picks the variants' own
motions that solve what the node's modes do not, for the caller to add to the node's modes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_coevolve.coevolve import signals
from robo_coevolve.coevolve.physical_check import check_physics
from robo_coevolve.coevolve.task_pool import OWN, PoolEntry, TaskPool
from robo_coevolve.coevolve.task_space import TaskSpace
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import trial_score
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec, TaskSpecError
from robo_coevolve.trajectory import Trajectory

log = logging.getLogger(__name__)

# Geometry is compiled into the MuJoCo model: a coarse grid keeps the number of distinct models small.
_GEOMETRY_GRID = {"pan_height": 0.005, "egg_size": 0.02}


@dataclass
class SynthesisReport:
    """What one ``evolve`` round did; ``validation_trials`` are the trials it ran (solvability
    checks, and the adversary's policy episodes when one searched)."""

    proposed: int = 0
    invalid_spec: int = 0
    invalid_physics: int = 0
    too_easy: int = 0
    set_aside: int = 0
    retried: int = 0
    admitted: int = 0
    promoted: int = 0
    validation_trials: int = 0
    weak: list[dict[str, Any]] = field(default_factory=list)
    reasons: dict[str, int] = field(default_factory=dict)
    adversary: dict[str, Any] | None = None  # the adversary's round (``AdversaryRound.to_dict``)
    answer: dict[str, Any] | None = None  # an answer search's round (``AnswerRound.to_dict``)

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


@dataclass(frozen=True)
class TaskSynthesizer:
    """See the module docstring.

    Args:
        space: the bounded task parameters varied.
        new_per_round: most variants admitted per round (proposals beyond are not validated).
        proposals_per_weak: perturbations proposed around each weak variant.
        weak_threshold: least ``total`` weakness for a variant to be perturbed.
        rare_proposals: proposals in the rarest regions per round.
        step: standard deviation of a perturbation, unit-cube units.
        rare_step: how far a rare proposal moves one parameter of a variant, unit-cube units.
        solve_trials: primitive trials per solvability check.
        jitter: unit-cube standard deviation of those primitives around the modes.
        max_retries: solvability checks of a candidate before it is dropped.
        too_easy: a candidate the node's own modes solve in more than this share of their
            solvability trials is rejected: they already solve it, so it teaches them nothing
            (1: none rejected; POET's minimal criterion, its upper bound).
        signal_weights: weights of forgetting, boundary, rarity and deficit in a variant's
            weakness (three: no deficit, as before it existed).
        bandwidth: kernel width of the rarity estimate, unit-cube RMS distance.
        floor: least weight of a variant.
        mastered: success rate over its last iteration from which a variant gets only ``floor``.
        seed_share: least share of the sampling mass kept by the node's own distribution.
        max_entries: most variants in a pool (the weakest proposals stop when it is full).
        mass_range: relative egg-mass spread of a new variant's distribution.
        control_hz: the env's control rate for the physics check.
        promote_rate: least success rate of a variant's own search (``PoolEntry.own_mode``) over
            an iteration for its motion to become one of the node's modes (``promote``) ...
        promote_margin: ... when it also beats the best node mode there by this much ...
        max_modes: ... while the node has fewer modes than this ...
        mode_distance: ... and it lies at least this far (RMS per parameter) from each of them.
    """

    space: TaskSpace = field(default_factory=TaskSpace)
    new_per_round: int = 4
    proposals_per_weak: int = 2
    weak_threshold: float = 0.2
    rare_proposals: int = 2
    step: float = 0.15
    rare_step: float = 0.3
    solve_trials: int = 8
    jitter: float = 0.03
    max_retries: int = 3
    too_easy: float = 1.0
    signal_weights: Sequence[float] = (1.0, 1.0, 0.5, 2.0)
    bandwidth: float = 0.1
    floor: float = 0.1
    mastered: float = 0.95
    seed_share: float = 0.3
    max_entries: int = 48
    mass_range: float = 0.05
    control_hz: float = 50.0
    promote_rate: float = 0.5
    promote_margin: float = 0.2
    max_modes: int = 6
    mode_distance: float = 0.03

    def __post_init__(self) -> None:
        if isinstance(self.space, dict):
            object.__setattr__(self, "space", TaskSpace(self.space))
        object.__setattr__(self, "signal_weights", tuple(float(w) for w in self.signal_weights))
        checks = {
            "new_per_round": (self.new_per_round >= 0, ">= 0"),
            "proposals_per_weak": (self.proposals_per_weak >= 0, ">= 0"),
            "rare_proposals": (self.rare_proposals >= 0, ">= 0"),
            "step": (self.step > 0, "> 0 (unit-cube units)"),
            "rare_step": (0 < self.rare_step <= 1, "in (0, 1] (unit-cube units)"),
            "solve_trials": (self.solve_trials >= 1, ">= 1"),
            "jitter": (self.jitter >= 0, ">= 0"),
            "max_retries": (self.max_retries >= 1, ">= 1"),
            "too_easy": (0 < self.too_easy <= 1, "in (0, 1]"),
            "bandwidth": (self.bandwidth > 0, "> 0"),
            "floor": (self.floor > 0, "> 0"),
            "mastered": (0 < self.mastered <= 1, "in (0, 1]"),
            "seed_share": (0 <= self.seed_share < 1, "in [0, 1)"),
            "max_entries": (self.max_entries >= 1, ">= 1"),
            "mass_range": (0 <= self.mass_range < 1, "in [0, 1)"),
            "promote_rate": (0 < self.promote_rate <= 1, "in (0, 1]"),
            "promote_margin": (0 <= self.promote_margin < 1, "in [0, 1)"),
            "max_modes": (self.max_modes >= 1, ">= 1"),
            "mode_distance": (self.mode_distance >= 0, ">= 0"),
            "signal_weights": (
                len(self.signal_weights) in (3, 4) and min(self.signal_weights) >= 0,
                "four weights >= 0 (forgetting, boundary, rare, deficit)",
            ),
        }
        for name, (ok, allowed) in checks.items():
            if not ok:
                raise ValueError(f"coevolve.synthesizer.{name}={getattr(self, name)!r}: must be {allowed}")

    # ------------------------------------------------------------------ signals
    def signals(self, pool: TaskPool) -> list[dict[str, float]]:
        """Per entry: ``forgetting``, ``boundary``, ``rare``, ``deficit`` and ``total`` (see
        ``signals``)."""
        points = np.array([self.space.features(e.base) for e in pool.entries])
        rare = signals.rarity(points, np.asarray(pool.visits).reshape(-1, self.space.dim), self.bandwidth)
        reference = signals.recent_rate([e.outcomes for e in pool.entries])
        w = self.signal_weights
        return [
            signals.weakness(e.outcomes, r, w, reference=reference)
            for e, r in zip(pool.entries, rare, strict=True)
        ]

    # ------------------------------------------------------------------ one round
    def evolve(
        self,
        pool: TaskPool,
        modes: Sequence[np.ndarray] | None,
        backend,
        rng: np.random.Generator,
        iteration: int,
        adversarial: list[TaskSpec] | None = None,
    ) -> tuple[SynthesisReport, list[Trajectory]]:
        """One round (module docstring) on ``pool``, in place; ``modes`` are the node's primitive
        modes (unit-cube parameters) for the solvability check (None: nothing can be shown
        solvable yet, so nothing is admitted); ``adversarial`` tasks (a ``TaskAdversary``'s
        candidates) are validated first, by the same checks. Returns the report and the
        solvability trials' successes."""
        report = SynthesisReport()
        weak = self.signals(pool)
        report.weak = [
            {"entry": i, **{k: round(v, 4) for k, v in w.items()}}
            for i, w in sorted(enumerate(weak), key=lambda x: -x[1]["total"])[:5]
        ]
        successes: list[Trajectory] = []
        if modes is not None and len(modes):
            adversary = [self._candidate(t, None, 0, "adversary", report) for t in adversarial or ()]
            candidates = [c for c in adversary if c is not None]
            candidates += self._retries(pool, report) + self._proposals(pool, weak, rng, report)
            for j, cand in enumerate(candidates):
                if len(pool) >= self.max_entries or report.admitted >= self.new_per_round:
                    # Set-aside candidates not reached wait for the next round.
                    pool.set_aside += [c for c in candidates[j:] if c["tries"] > 0]
                    break
                successes += self._validate(pool, cand, modes, backend, rng, iteration, report)
        self.reweight(pool, weak if len(weak) == len(pool) else None)
        return report, successes

    def reweight(self, pool: TaskPool, weak: list[dict[str, float]] | None = None) -> None:
        """Set every entry's weight from its weakness (see the module docstring)."""
        weak = weak if weak is not None else self.signals(pool)
        for e, w in zip(pool.entries, weak, strict=True):
            last_iteration = e.outcomes[-1][0] if e.outcomes else None
            recent = [s for k, s in e.outcomes if k == last_iteration]
            solid = len(recent) >= 4 and np.mean(recent) >= self.mastered
            e.weight = self.floor if solid else self.floor + w["total"]
        others = sum(e.weight for e in pool.entries[1:])
        if others > 0 and self.seed_share > 0:
            # Entry 0 is the node's own distribution: keep at least seed_share of the mass on it.
            least = self.seed_share / (1.0 - self.seed_share) * others
            pool.entries[0].weight = max(pool.entries[0].weight, least)

    def promote(self, pool: TaskPool, modes: Sequence[np.ndarray], iteration: int) -> list[list[float]]:
        """The motions to add to the node's ``modes``: the means of the variants' own searches
        that solved their variant at ``promote_rate`` or more over ``iteration``'s primitive
        trials (at least 4), ``promote_margin`` above the best node mode there, at least
        ``mode_distance`` from every mode and from each other, up to ``max_modes`` in all. Once
        a mode of the node, a motion is tried on every variant (``PoolEntry.choose_modes``): a
        motion found on the heaviest eggs also scoops the lighter ones, where the standard egg's
        motions drop the heaviest."""
        kept = [np.asarray(m, np.float64) for m in modes]
        out: list[list[float]] = []
        for e in pool.entries:
            if len(kept) >= self.max_modes:
                break
            own, n_own, best = e.own_success(iteration)
            if n_own < 4 or own < max(self.promote_rate, (best or 0.0) + self.promote_margin):
                continue
            mean = e.own_mode()[0]
            if min(np.sqrt(((mean - m) ** 2).mean()) for m in kept) < self.mode_distance:
                continue
            kept.append(mean)
            out.append([round(float(v), 6) for v in mean])
        return out

    # ------------------------------------------------------------------ proposals
    def _retries(self, pool: TaskPool, report: SynthesisReport) -> list[dict[str, Any]]:
        out, pool.set_aside = list(pool.set_aside), []
        report.retried = len(out)
        return out

    def _proposals(
        self, pool: TaskPool, weak: list[dict[str, float]], rng: np.random.Generator, report: SynthesisReport
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        order = sorted(range(len(weak)), key=lambda i: -weak[i]["total"])
        for i in order:
            if weak[i]["total"] < self.weak_threshold:
                break
            base = pool.entries[i].base
            centre = self.space.features(base)
            for _ in range(self.proposals_per_weak):
                point = np.clip(centre + rng.normal(0.0, self.step, self.space.dim), 0.0, 1.0)
                out.append(self._candidate(base, point, i, "weak", report))
        rare: list[dict[str, Any] | None] = []
        if self.rare_proposals:
            # The frontier: one parameter of one variant moved by rare_step, the least visited
            # of those points. A point drawn anywhere in the space moves all the parameters at
            # once, and is seldom a task the node's motions (or its variants') can solve.
            starts, points = [], []
            for i, e in enumerate(pool.entries):
                centre = self.space.features(e.base)
                for d in range(self.space.dim):
                    for sign in (-1.0, 1.0):
                        point = centre.copy()
                        point[d] = np.clip(point[d] + sign * self.rare_step, 0.0, 1.0)
                        if point[d] != centre[d]:
                            starts.append(i)
                            points.append(point)
            visits = np.asarray(pool.visits).reshape(-1, self.space.dim)
            rarity = signals.rarity(np.array(points), visits, self.bandwidth)
            order = rng.permutation(len(points))  # equals (nothing visited yet) in random order
            for j in order[np.argsort(-rarity[order], kind="stable")][: self.rare_proposals]:
                rare.append(
                    self._candidate(pool.entries[starts[j]].base, points[j], starts[j], "rare", report)
                )
        # The rare ones first: the weak variants' proposals alone fill a round.
        return [c for c in rare + out if c is not None]

    def _candidate(
        self, base: TaskSpec, point: np.ndarray | None, parent: int, why: str, report: SynthesisReport
    ) -> dict[str, Any] | None:
        """A candidate dict for ``base`` moved to ``point`` (None: ``base`` itself), or None when
        its TaskSpec is invalid (counted in ``report``)."""
        report.proposed += 1
        try:
            task = base if point is None else self.space.task_at(base, point)
            task = task.replace(
                **{k: round(getattr(task, k) / g) * g for k, g in _GEOMETRY_GRID.items()}, seed=0
            )
            TaskDistribution(task, egg_mass_range=self.mass_range)
        except TaskSpecError as e:
            report.invalid_spec += 1
            log.debug("synthesized task rejected: %s", e)
            return None
        return {"task": task.to_dict(), "parent": parent, "why": why, "tries": 0}

    # ------------------------------------------------------------------ validation
    def _validate(
        self,
        pool: TaskPool,
        cand: dict[str, Any],
        modes: Sequence[np.ndarray],
        backend,
        rng: np.random.Generator,
        iteration: int,
        report: SynthesisReport,
    ) -> list[Trajectory]:
        task = TaskSpec.from_dict(cand["task"])
        if cand["tries"] == 0:  # physics does not change between retries
            verdict = check_physics(task, self.control_hz)
            if not verdict.valid:
                report.invalid_physics += 1
                report.reasons[verdict.reason] = report.reasons.get(verdict.reason, 0) + 1
                return []
        tasks = TaskDistribution(task, egg_mass_range=self.mass_range)
        drawn = tasks.sample_many(rng, self.solve_trials)
        which = np.arange(self.solve_trials) % len(modes)
        centres = np.asarray(modes, np.float64)[which]
        params = np.clip(centres + rng.normal(0.0, self.jitter, centres.shape), 0.0, 1.0)
        # Every other trial runs the candidate's own search: refitted to its best trials so far
        # (a set-aside candidate keeps them for its retries), or before it has enough, its
        # parent variant's (the motion that makes a step away from the parent solvable).
        own = PoolEntry(tasks, elites=[(float(v), list(p)) for v, p in cand.get("elites", [])])
        parent = pool.entries[cand["parent"]] if cand["parent"] < len(pool) else None
        search = own if own.has_own_search else parent
        if search is not None and search.has_own_search:
            which[1::2] = OWN
            for j in range(1, self.solve_trials, 2):
                params[j] = search.sample_own(rng, self.jitter)
        trials = [
            Trial(t, PrimitivePlan(p), {"iteration": iteration, "source": "synthesis"})
            for t, p in zip(drawn, params, strict=True)
        ]
        trajs = backend.run_trials(trials)
        report.validation_trials += len(trajs)
        for t, p in zip(trajs, params, strict=True):
            own.add_elite(trial_score(t.outcome), p)
        wins = [t for t in trajs if t.success]
        by_modes = [t.success for t, m in zip(trajs, which, strict=True) if m != OWN]
        too_easy = bool(by_modes) and float(np.mean(by_modes)) > self.too_easy
        if too_easy or not wins:
            for t in trajs:  # visited all the same: the rare signal moves on
                pool.visit(self.space.features(t.task))
        if too_easy:
            report.too_easy += 1
            return wins  # real successes all the same, of a task not kept
        if not wins:
            cand = {**cand, "tries": cand["tries"] + 1, "elites": [[v, p] for v, p in own.elites]}
            if cand["tries"] < self.max_retries:
                pool.set_aside.append(cand)
                report.set_aside += 1
            return []
        origin = "adversary" if cand["why"] == "adversary" else "synthesized"
        entry = PoolEntry(
            tasks, self.floor, origin, parent=cand["parent"], iteration=iteration, elites=own.elites
        )
        index = pool.add(entry)
        for t, m in zip(trajs, which, strict=True):
            pool.record(index, t.success, iteration, self.space.features(t.task), mode=int(m))
        report.admitted += 1
        return wins
