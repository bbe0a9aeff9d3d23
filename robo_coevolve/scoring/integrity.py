"""Egg integrity from the normal contact force on the egg.

The egg carries a touch sensor (the summed normal force of every contact on it, so a squeeze
between blade and pan counts from both sides). Integrity is 1 while the peak force stays below the
crack force and falls linearly to 0 at the break force; it never recovers.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.scoring.thresholds import Thresholds


def integrity_from_peak(peak_force: float | np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """Integrity in [0, 1] for a peak normal force (N)."""
    span = thresholds.break_force - thresholds.crack_force
    damage = np.clip((np.asarray(peak_force, dtype=np.float64) - thresholds.crack_force) / span, 0, 1)
    return 1.0 - damage


def integrity_over_time(force: np.ndarray, thresholds: Thresholds) -> np.ndarray:
    """(T,) running integrity for a series of per-step peak forces (N)."""
    force = np.nan_to_num(np.asarray(force, dtype=np.float64), nan=np.inf)
    return integrity_from_peak(np.maximum.accumulate(force), thresholds)
