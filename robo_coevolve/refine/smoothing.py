"""Kinematic smoothing of a segment's spatula commands, and the jerk that measures it.

Exploration leaves jitter in the commands (policy noise) and kinks at keyframes. A Savitzky-Golay
filter (scipy) fits a local cubic over a sliding window of the commanded poses, which removes the
jitter while keeping the shape of the motion and its timing. Whether the smoothed motion still
works is not assumed: the refiner replays it and keeps it only if it still succeeds.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import savgol_filter

LEVER_ARM = 0.1  # m: turns angular jerk (rad/s^3) into the blade tip's (m/s^3), to add the two


def mean_squared_jerk(poses: np.ndarray, dt: float) -> float:
    """Mean over time of the squared jerk of a (T, 5) pose path (x, y, z m; pitch, roll rad):
    ``|d3 xyz/dt3|^2 + (LEVER_ARM * |d3 angles/dt3|)^2`` in (m/s^3)^2."""
    poses = np.asarray(poses, np.float64)
    if len(poses) < 4:
        return 0.0
    jerk = np.diff(poses, n=3, axis=0) / dt**3
    return float(np.mean(np.sum(jerk[:, :3] ** 2, axis=1) + LEVER_ARM**2 * np.sum(jerk[:, 3:] ** 2, axis=1)))


def smooth_actions(actions: np.ndarray, window: int = 9, polyorder: int = 3) -> np.ndarray:
    """Savitzky-Golay smoothing of normalised actions (T, 5) along time, clipped to [-1, 1]. The
    window shrinks to fit a short segment (odd, > polyorder); segments too short stay as they are."""
    actions = np.asarray(actions, np.float64)
    if polyorder < 0 or window < 3:
        raise ValueError(f"smoothing needs window >= 3 and polyorder >= 0, got {window} and {polyorder}")
    w = min(window, len(actions) if len(actions) % 2 else len(actions) - 1)
    if w <= polyorder:
        return actions.astype(np.float32)
    smooth = savgol_filter(actions, w, polyorder, axis=0, mode="interp")
    return np.clip(smooth, -1.0, 1.0).astype(np.float32)
