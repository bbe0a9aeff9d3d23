"""The refiner: keep the trials that matter, cut the moment that made them work, smooth it,
prove it still works, and let only what is new through.

Per batch of trials (top to bottom):

1. **success**: the scorer's verdict;
2. **integrity**: at least ``min_integrity`` (stricter than the success predicate's, so the
   library teaches gentle handling);
3. **core window** (``segments.core_window``): prune earlier failed attempts, keep the attempt
   that worked from its start (its approach included) to just after the success settles;
4. **efficiency**: window length and blade path length at most ``efficiency_ratio`` times the
   batch's median (drops wandering solutions);
5. **smoothing** (Savitzky-Golay on the window's actions, at most ``SKILL_SMOOTH_WINDOW`` steps
   wide for the skills listed there) and **replay** from the window's start state: a segment
   whose smoothed motion no longer succeeds is dropped;
6. **novelty gate** against the library's features (``novelty.NoveltyGate``).

``RefineReport`` counts what each stage let through and the jerk before and after smoothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.refine.core_window import core_window, simulate_window, states_along, success_onset
from robo_coevolve.refine.novelty import NoveltyGate
from robo_coevolve.refine.smoothing import mean_squared_jerk, smooth_actions
from robo_coevolve.scoring import Scorer, Thresholds
from robo_coevolve.segment import Segment
from robo_coevolve.trajectory import Trajectory


@dataclass
class RefineReport:
    """What each stage of one ``refine`` call let through."""

    trials: int = 0
    successes: int = 0
    gentle: int = 0  # passed the integrity filter
    efficient: int = 0
    replayed: int = 0  # smoothed segments replayed
    survived: int = 0  # ... that still succeeded
    admitted: int = 0  # ... that passed the novelty gate
    duplicates: int = 0
    jerk_before: list[float] = field(default_factory=list)  # per surviving segment, (m/s^3)^2
    jerk_after: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Every field, with the per-segment jerk lists."""
        return {**asdict(self), **self._means()}

    def summary(self) -> dict:
        """The counts and the mean jerk before and after smoothing."""
        return {k: v for k, v in asdict(self).items() if not k.startswith("jerk")} | self._means()

    def _means(self) -> dict:
        return {
            "mean_jerk_before": float(np.mean(self.jerk_before)) if self.jerk_before else None,
            "mean_jerk_after": float(np.mean(self.jerk_after)) if self.jerk_after else None,
        }


# The widest smoothing window (control steps) of a skill whose motion a wider one would blunt. A
# toss's throw lasts 4-5 control steps: smoothed over 9, 5 of 60 of a search answer's successful
# demonstrations still tossed on replay; over 7, 56; over 5, all 60.
SKILL_SMOOTH_WINDOW = {"toss": 5}


class Refiner:
    """Turns trials into library segments; see the module docstring.

    Args:
        thresholds: scoring thresholds (as the trials were scored with).
        min_integrity: least integrity of a kept trial.
        efficiency_ratio: most window length and blade path, relative to the batch median.
        margin_after: s kept after the success settles; None keeps the rest of the trial (a
            trial is judged at its end, so its tail shows what to do once the skill is done:
            hold the egg, keep the blade off it); cut windows cloned better.
        hold_to_end: after the window (and its margin), hold the last command until the trial's
            horizon, and keep the segment only if the replay still succeeds with the spatula held
            still: the policy learns to stop once the skill is done, from motions that were
            proved to allow it, instead of copying whatever the source trial did next.
        smooth: smooth the actions (False keeps the source actions; they are still replayed).
        smooth_window, smooth_polyorder: Savitzky-Golay settings (control steps, degree); a skill
            in ``SKILL_SMOOTH_WINDOW`` is smoothed over at most its window there.
        novelty: a NoveltyGate or its arguments.
    """

    def __init__(
        self,
        thresholds: Thresholds | Mapping | None = None,
        min_integrity: float = 0.9,
        efficiency_ratio: float = 2.0,
        margin_after: float | None = 0.2,
        hold_to_end: bool = False,
        smooth: bool = True,
        smooth_window: int = 9,
        smooth_polyorder: int = 3,
        novelty: NoveltyGate | Mapping | None = None,
    ):
        if isinstance(thresholds, Mapping):
            thresholds = Thresholds(**thresholds)
        if isinstance(novelty, Mapping):
            novelty = NoveltyGate(**novelty)
        if not 0 <= min_integrity <= 1:
            raise ValueError(f"refine min_integrity={min_integrity} must be in [0, 1]")
        if efficiency_ratio < 1:
            raise ValueError(f"refine efficiency_ratio={efficiency_ratio} must be >= 1 (x the batch median)")
        if margin_after is not None and margin_after < 0:
            raise ValueError(f"refine margin_after={margin_after} must be >= 0 s")
        self.thresholds = thresholds or Thresholds()
        self.min_integrity = min_integrity
        self.efficiency_ratio = efficiency_ratio
        self.margin_after = margin_after
        self.hold_to_end = hold_to_end
        self.smooth = smooth
        self.smooth_window = smooth_window
        self.smooth_polyorder = smooth_polyorder
        self.gate = novelty or NoveltyGate()
        self._envs: dict[tuple, EggFlipEnv] = {}

    def _env(self, traj: Trajectory) -> EggFlipEnv:
        key = (traj.task.pan_height, traj.task.egg_size, traj.control_hz)
        if key not in self._envs:
            self._envs[key] = EggFlipEnv(
                task=traj.task, control_hz=traj.control_hz, thresholds=self.thresholds
            )
        return self._envs[key]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()

    def refine(
        self, trajs: list[Trajectory], library_features: np.ndarray | None = None, iteration: int = 0
    ) -> tuple[list[Segment], RefineReport]:
        """The admitted segments of ``trajs`` and the report; ``library_features`` (N, F) are
        the stored segments' ``meta["features"]``."""
        report = RefineReport(trials=len(trajs))
        wins = [t for t in trajs if t.success]
        report.successes = len(wins)
        gentle = [t for t in wins if t.outcome["integrity"] >= self.min_integrity]
        report.gentle = len(gentle)

        windows = []
        for traj in gentle:
            scorer = Scorer(1.0 / traj.control_hz, self.thresholds)
            margin = None if self.margin_after is None else int(round(self.margin_after * traj.control_hz))
            events = scorer.events(traj.record())  # once: both the window and the onset read them
            window = core_window(traj, scorer, margin, events)
            if window is not None:
                start, stop = window
                # Efficiency is how long and how far the attempt went until it succeeded; the
                # tail after it (holding, or the whole rest of the trial) is not part of that.
                onset = max(success_onset(traj, scorer, events), start + 1)
                path = float(
                    np.linalg.norm(np.diff(traj.proprio[start : onset + 1, :3], axis=0), axis=1).sum()
                )
                windows.append((traj, start, stop, onset - start, path))
        if windows:
            lengths = np.array([w[3] for w in windows])
            paths = np.array([w[4] for w in windows])
            ok = (lengths <= self.efficiency_ratio * np.median(lengths)) & (
                paths <= self.efficiency_ratio * np.median(paths) + 1e-9
            )
            windows = [w for w, keep in zip(windows, ok, strict=True) if keep]
        report.efficient = len(windows)

        survivors = []
        for traj, start, stop, _, path in windows:
            env = self._env(traj)
            states = states_along(traj, env)
            raw = traj.actions[start:stop]
            window = min(self.smooth_window, SKILL_SMOOTH_WINDOW.get(traj.task.skill, self.smooth_window))
            actions = smooth_actions(raw, window, self.smooth_polyorder) if self.smooth else raw
            held = 0
            if self.hold_to_end:
                held = max(int(round(traj.task.horizon * traj.control_hz)) - stop, 0)
                actions = np.concatenate([actions, np.repeat(actions[-1:], held, axis=0)])
            meta = {
                "iteration": iteration,
                "source": {"seed": traj.seed, "start": start, "stop": stop, **traj.meta},
                "smoothing": {
                    "method": "savgol" if self.smooth else "none",
                    "window": window,
                    "polyorder": self.smooth_polyorder,
                },
                "path_length": path,
                "held_steps": held,
            }
            segment = simulate_window(env, traj, states[start], actions, meta)
            report.replayed += 1
            if not segment.success:
                continue
            dt = 1.0 / traj.control_hz
            before = mean_squared_jerk(traj.proprio[start : stop + 1, :5], dt)
            after = mean_squared_jerk(segment.proprio[: stop - start + 1, :5], dt)
            segment.meta["smoothing"].update(jerk_before=before, jerk_after=after)
            report.jerk_before.append(before)
            report.jerk_after.append(after)
            survivors.append(segment)
        report.survived = len(survivors)

        admitted, rejected = self.gate.admit(survivors, library_features)
        report.admitted, report.duplicates = len(admitted), len(rejected)
        return admitted, report
