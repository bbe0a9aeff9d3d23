"""Graded scores for search: how close a failure came (progress), how safe a success was (margin).

Black-box search needs to rank failures too: an egg lifted half-way beats one never touched. And
it needs to rank successes: one that lands the egg gently in the middle of the pan survives a
heavier egg or a nudge where one that barely stays on the rim does not. Both scores are in [0, 1]
and built only from the scorer's own per-step events (nothing the scorer does not know). They
guide the explorer; success itself is always the predicate in ``success.py``.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.scoring.thresholds import Thresholds

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


def progress(skill: str, ev: Events, hold_steps: int, thresholds: Thresholds) -> float:
    """Graded progress of one trial towards ``skill``'s success, in [0, 1]."""
    held = ev["blade_only"]
    lifted_on_blade = held & ev["lifted"]
    if skill == "scoop":
        lift = np.where(held, ev["height"], 0.0).max(initial=0.0) / (2 * thresholds.lift_height)
        parts = [
            (0.2, float(held.any())),
            (0.2, min(1.0, lift)),
            (0.3, _end(lifted_on_blade, hold_steps)),
            (0.3, _end(lifted_on_blade & ev["resting"], hold_steps)),
        ]
    elif skill == "flip":
        turned = (1.0 - ev["up_z"]) / 2  # 0 upright, 1 upside down
        parts = [
            (0.3, float(turned.max(initial=0.0))),
            (0.4, _end(ev["upside_down"], hold_steps)),
            (0.3, _end(ev["upside_down"] & ev["resting"], hold_steps)),
        ]
    elif skill == "catch":
        touched_pan = np.flatnonzero(ev["on_pan"])
        before = slice(0, touched_pan[0] if len(touched_pan) else len(held))
        parts = [
            (0.2, float(held[before].any())),
            (0.2, float(not len(touched_pan))),
            (0.3, _end(lifted_on_blade, hold_steps)),
            (0.3, _end(lifted_on_blade & ev["resting"], hold_steps)),
        ]
    else:
        raise ValueError(f"no progress measure for skill {skill!r}")
    score = sum(w * v for w, v in parts)
    if not ev["finite"].all():
        return 0.0
    if ev["on_floor"].any():
        score *= 0.2
    integrity = float(ev["integrity"][-1]) if len(ev["integrity"]) else 1.0
    if integrity < thresholds.min_integrity:
        score *= 0.5 * integrity
    return float(np.clip(score, 0.0, 1.0))
