"""The env's action space: normalised actions in [-1, 1] and the spatula commands they stand for.

An action is the spatula's target pose (x, y, z, pitch, roll) scaled from its reachable box
(``task_spec.SPATULA_LOW`` .. ``SPATULA_HIGH``) to [-1, 1]; the proprioception's last five entries
hold the previous command in metres and radians. Explorer, policy and export share these.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.task_spec import SPATULA_HIGH, SPATULA_LOW

LOW = np.array(SPATULA_LOW)
HIGH = np.array(SPATULA_HIGH)


def command_as_action(proprio: np.ndarray) -> np.ndarray:
    """The previous command held in ``proprio`` (..., 15) as a normalised action (..., 5)."""
    command = np.asarray(proprio, np.float64)[..., 10:15]
    return (2.0 * (command - LOW) / (HIGH - LOW) - 1.0).astype(np.float32)


def with_command(proprio: np.ndarray, action: np.ndarray) -> np.ndarray:
    """``proprio`` (..., 15) with its previous command replaced by the normalised ``action`` (..., 5)
    (the inverse of :func:`command_as_action`)."""
    out = np.array(proprio, np.float64)
    out[..., 10:15] = LOW + (np.asarray(action, np.float64) + 1.0) / 2.0 * (HIGH - LOW)
    return out.astype(np.float32)
