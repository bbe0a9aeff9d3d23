"""Graded scores for search: how close a failure came (progress), how safe a success was (margin).

Black-box search needs to rank failures too: an egg lifted half-way beats one never touched. And
it needs to rank successes: one that lands the egg gently in the middle of the pan survives a
heavier egg or a nudge where one that barely stays on the rim does not. Both scores are in [0, 1]
and built only from the scorer's own per-step events (nothing the scorer does not know). They
guide the explorer; success itself is always the predicate in ``success.py``.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from robo_coevolve.scoring.integrity import integrity_from_peak
from robo_coevolve.scoring.salt import seasoned
from robo_coevolve.scoring.success import side_kept
from robo_coevolve.scoring.thresholds import Thresholds
from robo_coevolve.task_spec import PLATE_CENTRE, SALT_SKILLS

Events = dict[str, np.ndarray]


def _end(x: np.ndarray, hold_steps: int) -> float:
    """Fraction of the last ``hold_steps`` steps where ``x`` holds."""
    return float(np.mean(x[-hold_steps:])) if len(x) else 0.0


PLACEMENT_SCALE = 0.08  # m off the centre of its support at which an egg has no placement margin


def margin(ev: Events, hold_steps: int, thresholds: Thresholds) -> float:
    """Safety margin of a trial in [0, 1]: the mean of how far the peak force stayed below the
    force that would crack the egg past ``min_integrity``, and how close to the centre of its
    support (pan or blade) the egg ends."""
    if not len(ev["force"]) or not ev["finite"].all():
        return 0.0
    limit = thresholds.crack_force + (1 - thresholds.min_integrity) * (
        thresholds.break_force - thresholds.crack_force
    )
    force = 1.0 - float(np.nan_to_num(ev["force"], nan=np.inf).max()) / limit
    placement = 1.0 - float(np.mean(ev["off_centre"][-hold_steps:])) / PLACEMENT_SCALE
    return float(np.clip(0.5 * (np.clip(force, 0, 1) + np.clip(placement, 0, 1)), 0.0, 1.0))


# Weight of each progress term, per skill, in the order ``_terms`` and ``ProgressTracker`` give them.
WEIGHTS = {
    "scoop": (0.2, 0.2, 0.3, 0.3),
    "flip": (0.3, 0.4, 0.3),
    "catch": (0.2, 0.2, 0.3, 0.3),
    "toss": (0.2, 0.2, 0.3, 0.3),
    "serve": (0.2, 0.2, 0.3, 0.3),
    "season": (0.2, 0.15, 0.2, 0.25, 0.2),
}
# Skills whose egg belongs on the plate: in every other skill an egg on the plate is lost.
PLATE_SKILLS = ("serve", "season")
SHAKER_REACH = 0.25  # m from the blade to the shaker's base at which reaching it earns nothing
AIM_SCALE = 0.1  # m from the hole to the egg's axis at which aiming earns nothing
PLATE_DISTANCE = math.hypot(*PLATE_CENTRE)  # m from the pan's centre: a serve's carry to cover


def _combine(
    skill: str,
    terms: tuple[float, ...],
    finite: bool,
    ever_fell: bool,
    integrity: float,
    thresholds: Thresholds,
) -> float:
    """The weighted terms, zero for a diverged trial, cut for a fallen or cracked egg. An egg that
    lands on the plate in any skill but serve and season has left the stove as a fallen one has:
    it is cut the same (else flinging it onto the plate would beat dropping it)."""
    score = sum(w * v for w, v in zip(WEIGHTS[skill], terms, strict=True))
    if not finite:
        return 0.0
    if ever_fell:
        score *= 0.2
    if integrity < thresholds.min_integrity:
        score *= 0.5 * integrity
    return float(np.clip(score, 0.0, 1.0))


def progress(skill: str, ev: Events, hold_steps: int, thresholds: Thresholds) -> float:
    """Graded progress of one trial towards ``skill``'s success, in [0, 1].

    The terms (weights in ``WEIGHTS``): scoop: the blade alone ever held the egg, the highest it
    lifted it (full at twice ``lift_height``), and the end window's fraction of steps where the egg
    is lifted on the blade alone, and also resting; flip: how far the egg ever turned over, and the
    end window's fraction upside down, and also resting; catch: the blade held the egg before it
    ever touched the pan, it never touched the pan, and the end window as for scoop; toss: the
    blade alone held the egg after it had been in the air (a catch) before it ever touched the
    pan, how far turned over it ever was in such a catch, and the end window's fraction of steps
    where it is upside down and lifted on the blade alone, and also resting. (Turning the egg over
    is not credited by itself: the search would find flips onto the pan, not throws.); serve: how
    near the plate's centre the blade or the plate ever held the egg (full on it, nothing
    ``PLATE_DISTANCE`` away), the plate alone ever held it, and the end window's fraction of steps
    where it lies on the plate alone the side up it started, and also resting; season: reaching
    the shaker (full once held, else how near the blade came to its base, nothing at
    ``SHAKER_REACH``), how near the egg's axis the held, upturned shaker's hole came (nothing at
    ``AIM_SCALE``), the dose (full from ``salt_min`` to ``salt_max`` grains), the share of it on
    the egg times how spread it is (full at ``salt_cells`` cells), and the end window's fraction of
    steps where the season's predicate holds.
    """
    if skill not in WEIGHTS:
        raise ValueError(f"no progress measure for skill {skill!r}")
    held = ev["blade_only"]
    lifted_on_blade = held & ev["lifted"]
    if skill == "scoop":
        lift = np.where(held, ev["height"], 0.0).max(initial=0.0) / (2 * thresholds.lift_height)
        terms = (
            float(held.any()),
            min(1.0, lift),
            _end(lifted_on_blade, hold_steps),
            _end(lifted_on_blade & ev["resting"], hold_steps),
        )
    elif skill == "serve":
        supported = held | ev["plate_only"]
        closest = np.where(supported, ev["to_plate"], PLATE_DISTANCE).min(initial=PLATE_DISTANCE)
        served = ev["plate_only"] & side_kept(ev, thresholds)
        terms = (
            max(0.0, 1.0 - float(closest) / PLATE_DISTANCE),
            float(ev["plate_only"].any()),
            _end(served, hold_steps),
            _end(served & ev["resting"], hold_steps),
        )
    elif skill == "season":
        terms = _season_terms(ev, hold_steps, thresholds)
    elif skill == "flip":
        turned = (1.0 - ev["up_z"]) / 2  # 0 upright, 1 upside down
        terms = (
            float(turned.max(initial=0.0)),
            _end(ev["upside_down"], hold_steps),
            _end(ev["upside_down"] & ev["resting"], hold_steps),
        )
    else:
        touched_pan = np.flatnonzero(ev["on_pan"])
        before = slice(0, touched_pan[0] if len(touched_pan) else len(held))
        if skill == "catch":
            terms = (
                float(held[before].any()),
                float(not len(touched_pan)),
                _end(lifted_on_blade, hold_steps),
                _end(lifted_on_blade & ev["resting"], hold_steps),
            )
        else:  # toss
            caught = (held & np.logical_or.accumulate(ev["in_air"]))[before]
            turned = (1.0 - ev["up_z"][before][caught]) / 2
            upside_down = lifted_on_blade & ev["upside_down"]
            terms = (
                float(caught.any()),
                float(turned.max(initial=0.0)),
                _end(upside_down, hold_steps),
                _end(upside_down & ev["resting"], hold_steps),
            )
    integrity = float(ev["integrity"][-1]) if len(ev["integrity"]) else 1.0
    lost = ev["on_floor"] | (ev["on_plate"] if skill not in PLATE_SKILLS else False)
    return _combine(skill, terms, bool(ev["finite"].all()), bool(lost.any()), integrity, thresholds)


def _season_terms(ev: Events, hold_steps: int, thresholds: Thresholds) -> tuple[float, ...]:
    """A season's progress terms: reaching the shaker, aiming its hole at the egg, the dose, the
    salt on the egg and spread, and the end window (see ``progress``)."""
    if not len(ev["salt_dispensed"]):
        return (0.0,) * 5
    grip = 1.0 if ev["shaker_held"].any() else max(0.0, 1.0 - float(ev["shaker_grip"].min()) / SHAKER_REACH)
    aiming = ev["shaker_held"] & ev["shaker_inverted"]
    closest = np.where(aiming, ev["hole_to_egg"], AIM_SCALE).min()
    n = int(ev["salt_dispensed"][-1])
    dose = min(1.0, n / thresholds.salt_min) * min(1.0, thresholds.salt_max / max(n, 1))
    spread = min(1.0, int(ev["salt_cells"][-1]) / thresholds.salt_cells)
    on_egg = int(ev["salt_on_egg"][-1]) / max(n, 1) * spread
    done = ev["plate_only"] & side_kept(ev, thresholds) & ev["resting"] & seasoned(ev, thresholds)
    return (grip, max(0.0, 1.0 - float(closest) / AIM_SCALE), dose, on_egg, _end(done, hold_steps))


class _Window:
    """How many of the last ``size`` flags pushed were true, and how many were pushed (at most size)."""

    def __init__(self, size: int):
        self.flags: deque[bool] = deque(maxlen=size)
        self.count = 0

    def push(self, flag: bool) -> float:
        """Push ``flag``; the fraction of true flags in the window (``_end`` of the series so far)."""
        if len(self.flags) == self.flags.maxlen:
            self.count -= self.flags[0]
        self.flags.append(flag)
        self.count += flag
        return self.count / len(self.flags)


class ProgressTracker:
    """``progress`` of the episode so far, updated one step at a time in O(1): the running maxima,
    flags and end-window counts that ``progress`` reads off a whole record. ``update`` takes one
    step's events (``events.row_events``) and returns what ``progress`` would return on the events
    of every step so far (the dense reward's potential)."""

    def __init__(self, skill: str, hold_steps: int, thresholds: Thresholds):
        if skill not in WEIGHTS:
            raise ValueError(f"no progress measure for skill {skill!r}")
        if skill in SALT_SKILLS:
            raise ValueError(f"a {skill}'s progress reads every grain: take progress() of the record so far")
        self.skill = skill
        self.hold_steps = hold_steps
        self.thresholds = thresholds
        self.reset()

    def reset(self) -> None:
        """Forget the episode: the next ``update`` is its first step."""
        # scoop: the blade alone ever held the egg; catch: before any pan touch; toss: after the egg
        # was in the air, before any pan touch
        self._held = False
        self._touched_pan = False
        self._flew = False  # toss: the egg has been in the air
        # scoop: highest egg on the blade alone; flip: most turned over; toss: most turned over
        # while held as for ``_held``
        self._highest = 0.0
        self._closest = PLATE_DISTANCE  # serve: nearest the blade or plate held the egg to the plate
        self._started_upright: bool | None = None  # serve: the side the egg started
        self._window = _Window(self.hold_steps)
        self._window_resting = _Window(self.hold_steps)
        self._finite = True
        self._fell = False
        self._peak_force = 0.0
        self._integrity = 1.0

    def update(self, ev: dict[str, float | bool]) -> float:
        """Take one step's events; the episode's progress so far."""
        th = self.thresholds
        force = ev["force"]
        force = math.inf if math.isnan(force) else force
        if force > self._peak_force:
            self._peak_force = force
            self._integrity = float(integrity_from_peak(force, th))
        self._finite = self._finite and ev["finite"]
        self._fell = self._fell or ev["on_floor"] or (self.skill not in PLATE_SKILLS and ev["on_plate"])
        held = ev["blade_only"]
        if self.skill == "flip":
            self._highest = max(self._highest, (1.0 - ev["up_z"]) / 2)
            flag = ev["upside_down"]
        elif self.skill == "serve":
            if self._started_upright is None:
                self._started_upright = ev["up_z"] >= 0
            if held or ev["plate_only"]:
                self._closest = min(self._closest, ev["to_plate"])
            self._held = self._held or ev["plate_only"]
            up_z, bar = ev["up_z"], th.upside_down_z
            flag = ev["plate_only"] and (up_z > -bar if self._started_upright else up_z < bar)
        elif self.skill == "toss":
            self._flew = self._flew or ev["in_air"]
            if ev["on_pan"]:
                self._touched_pan = True
            elif not self._touched_pan and held and self._flew:
                self._held = True
                self._highest = max(self._highest, (1.0 - ev["up_z"]) / 2)
            flag = held and ev["lifted"] and ev["upside_down"]
        else:
            flag = held and ev["lifted"]
            if self.skill == "scoop":
                self._held = self._held or held
                self._highest = max(self._highest, ev["height"] if held else 0.0)
            elif ev["on_pan"]:
                self._touched_pan = True
            elif not self._touched_pan:
                self._held = self._held or held
        end = self._window.push(flag)
        end_resting = self._window_resting.push(flag and ev["resting"])
        if self.skill == "scoop":
            terms = (float(self._held), min(1.0, self._highest / (2 * th.lift_height)), end, end_resting)
        elif self.skill == "flip":
            terms = (self._highest, end, end_resting)
        elif self.skill == "toss":
            terms = (float(self._held), self._highest, end, end_resting)
        elif self.skill == "serve":
            terms = (max(0.0, 1.0 - self._closest / PLATE_DISTANCE), float(self._held), end, end_resting)
        else:
            terms = (float(self._held), float(not self._touched_pan), end, end_resting)
        return _combine(self.skill, terms, self._finite, self._fell, self._integrity, th)


def progress_over_time(skill: str, ev: Events, hold_steps: int, thresholds: Thresholds) -> np.ndarray:
    """(T,) the progress of every prefix of a trial: step t's is ``progress`` of steps 0..t. A
    ``ProgressTracker`` walks the steps in O(T); a season's, which reads every grain, takes each
    prefix's events in turn."""
    steps = len(ev["finite"])
    if skill in SALT_SKILLS:
        return np.array(
            [
                progress(skill, {k: v[: t + 1] for k, v in ev.items()}, hold_steps, thresholds)
                for t in range(steps)
            ]
        )
    tracker = ProgressTracker(skill, hold_steps, thresholds)
    return np.array([tracker.update({k: v[t] for k, v in ev.items()}) for t in range(steps)])
