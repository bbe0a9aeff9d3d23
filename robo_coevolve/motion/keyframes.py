"""Keyframe motions: spatula targets interpolated between timed keyframes.

A motion is a list of (time s, pose) keyframes, pose = (x, y, z, pitch, roll) in m and rad from
the pan surface centre (``EggFlipEnv.pose_to_action`` turns poses into env actions).
Between keyframes the target follows a shape-preserving cubic (scipy's PCHIP), which never
overshoots a keyframe: a blade told to stay at z = 0 does not dip into the pan between two of them.
Before the first and after the last keyframe the target holds still.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.interpolate import PchipInterpolator


class KeyframeMotion:
    """Spatula targets from keyframes.

    Args:
        times: (K,) strictly increasing keyframe times, s.
        poses: (K, 5) keyframe poses.
    """

    def __init__(self, times: Sequence[float], poses: Sequence[Sequence[float]]):
        self.times = np.asarray(times, dtype=np.float64)
        self.poses = np.asarray(poses, dtype=np.float64)
        if self.times.ndim != 1 or self.poses.shape != (len(self.times), 5):
            raise ValueError(
                f"keyframes need times (K,) and poses (K, 5), got {self.times.shape} and {self.poses.shape}"
            )
        if len(self.times) < 2 or np.any(np.diff(self.times) <= 0):
            raise ValueError(f"keyframe times must be >= 2 and strictly increasing: {self.times}")
        self._spline = PchipInterpolator(self.times, self.poses, axis=0, extrapolate=False)

    def at(self, t: float | np.ndarray) -> np.ndarray:
        """Target pose(s) at time(s) ``t`` s: (5,) or (len(t), 5)."""
        t = np.clip(np.asarray(t, dtype=np.float64), self.times[0], self.times[-1])
        return self._spline(t)

    def targets(self, control_dt: float, steps: int) -> np.ndarray:
        """(steps, 5) float32 target poses, one per control step; step k targets time (k + 1) * dt,
        where the servos should be by the end of the step."""
        return self.at((np.arange(steps) + 1) * control_dt).astype(np.float32)
