"""Scorer: physics judgement of a trial from its sensor record."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robo_coevolve.scoring.events import step_events
from robo_coevolve.scoring.progress import margin, progress
from robo_coevolve.scoring.success import judge
from robo_coevolve.scoring.thresholds import Thresholds


@dataclass(frozen=True)
class Outcome:
    """What happened in one trial.

    ``success`` is the skill's predicate (see ``robo_coevolve.scoring.success``), ``reason`` the
    first unmet condition or "success", ``progress`` in [0, 1] how close it came (see
    ``robo_coevolve.scoring.progress``), ``margin`` in [0, 1] how safely (force and placement
    margins), ``integrity`` in [0, 1], ``peak_force`` N, ``max_height``
    m above the pan surface, ``steps`` control steps scored.
    """

    skill: str
    success: bool
    reason: str
    progress: float
    margin: float
    integrity: float
    peak_force: float
    max_height: float
    ever_on_blade: bool
    ever_upside_down: bool
    ever_on_floor: bool
    diverged: bool
    steps: int

    def to_dict(self) -> dict:
        return dict(vars(self))  # asdict's result (every field is a plain value), without its cost


class Scorer:
    """Scores egg-flip trials. Pure: it reads sensor records and never touches the simulator.

    Args:
        control_dt: s per record row (the env's control period).
        thresholds: the numbers behind every judgement.
    """

    def __init__(self, control_dt: float, thresholds: Thresholds | None = None):
        self.control_dt = control_dt
        self.thresholds = thresholds or Thresholds()
        self.hold_steps = max(1, math.ceil(self.thresholds.hold_time / control_dt - 1e-9))

    def events(self, record: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Per-step events (see ``robo_coevolve.scoring.events.step_events``)."""
        return step_events(record, self.thresholds)

    def outcome(self, skill: str, record: dict[str, np.ndarray], diverged: bool = False) -> Outcome:
        """The trial's outcome; ``diverged`` flags an instability the record itself may not show."""
        ev = self.events(record)
        if diverged:  # the instability ended the trial at its last step
            ev["finite"] = ev["finite"].copy()
            ev["finite"][-1] = False
        success, reason = judge(skill, ev, self.hold_steps, self.thresholds)
        force = np.nan_to_num(ev["force"], nan=np.inf)
        return Outcome(
            skill=skill,
            success=bool(success),
            reason=reason,
            progress=1.0 if success else progress(skill, ev, self.hold_steps, self.thresholds),
            margin=margin(ev, self.hold_steps, self.thresholds),
            integrity=float(ev["integrity"][-1]),
            peak_force=float(force.max()),
            max_height=float(ev["height"].max()),
            ever_on_blade=bool(ev["on_blade"].any()),
            ever_upside_down=bool(ev["upside_down"].any()),
            ever_on_floor=bool(ev["on_floor"].any()),
            diverged=bool(not ev["finite"].all()),
            steps=len(force),
        )
