"""Per-step events of the egg, computed from a control-rate sensor record.

A record is a dict of sensor name -> (T, dim) array, as ``EggFlipPhysics.record`` builds it from
the scene's sensors (egg pose relative to the pan, contact flags, touch force, ...). Every function
here is pure and vectorised over time, so the same code scores a live episode and a batch of
recorded rollouts.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.scoring.integrity import integrity_over_time
from robo_coevolve.scoring.thresholds import Thresholds

PHASES = ("in air", "on pan", "on blade", "pinched", "on burner", "on floor", "diverged")


def phase_index(on_blade, on_pan, on_burner, on_floor, finite):
    """Index into ``PHASES`` of the egg's situation; works on scalars and on (T,) arrays."""
    return np.select(
        [~np.asarray(finite), on_floor, on_burner, on_blade & on_pan, on_blade, on_pan],
        [PHASES.index(p) for p in ("diverged", "on floor", "on burner", "pinched", "on blade", "on pan")],
        default=PHASES.index("in air"),
    )


def fell(on_floor, height, thresholds: Thresholds):
    """The egg touched the floor, or is more than ``fall_depth`` below the pan surface (on its way
    there); scalars or (T,) arrays."""
    return (np.asarray(on_floor) > 0) | (np.nan_to_num(np.asarray(height)) < -thresholds.fall_depth)


def step_events(record: dict[str, np.ndarray], thresholds: Thresholds) -> dict[str, np.ndarray]:
    """Boolean and scalar events per step, each a (T,) array.

    Keys:

    - ``height``: m of the egg's frame above the pan surface;
    - ``on_blade``, ``on_pan``, ``on_burner``: contact flags; ``on_floor``: touched the floor or
      fell below the pan (see ``fell``); ``blade_only``: the blade is the egg's only support;
      ``in_air``: no contact at all;
    - ``lifted``: above ``lift_height``; ``up_z``: world z of the egg's top axis (1 upright,
      -1 upside down); ``upside_down``; ``resting``: slow relative to its support;
    - ``force``: peak normal force on the egg, N; ``integrity``: running, in [0, 1];
    - ``off_centre``: m of the egg from the centre of what holds it (the blade's centre when on
      the blade, else the pan's);
    - ``finite``: the state was a number; ``phase``: index into ``PHASES``.
    """
    finite = np.isfinite(np.concatenate([v.reshape(len(v), -1) for v in record.values()], axis=1)).all(1)
    pos = np.nan_to_num(record["egg_pos"])
    height = pos[:, 2]
    on_blade = record["egg_on_blade"][:, 0] > 0
    on_pan = record["egg_on_pan"][:, 0] > 0
    on_floor = fell(record["egg_on_floor"][:, 0], height, thresholds)
    on_burner = record["egg_on_burner"][:, 0] > 0
    blade_only = on_blade & ~on_pan & ~on_floor & ~on_burner
    support_velocity = np.where(on_blade[:, None], record["blade_linvel"], 0.0)
    speed = np.linalg.norm(np.nan_to_num(record["egg_linvel"] - support_velocity), axis=1)
    spin = np.linalg.norm(np.nan_to_num(record["egg_angvel"]), axis=1)
    in_air = ~(on_blade | on_pan | on_floor | on_burner)
    force = record["egg_touch"][:, 0]
    support_xy = np.where(on_blade[:, None], np.nan_to_num(record["blade_pos"][:, :2]), 0.0)
    off_centre = np.linalg.norm(pos[:, :2] - support_xy, axis=1)

    phase = phase_index(on_blade, on_pan, on_burner, on_floor, finite)
    return {
        "height": height,
        "on_blade": on_blade,
        "on_pan": on_pan,
        "on_floor": on_floor,
        "on_burner": on_burner,
        "blade_only": blade_only,
        "lifted": height > thresholds.lift_height,
        "up_z": np.nan_to_num(record["egg_up"][:, 2], nan=1.0),
        "upside_down": np.nan_to_num(record["egg_up"][:, 2], nan=1.0) < thresholds.upside_down_z,
        "resting": (speed < thresholds.rest_speed) & (spin < thresholds.rest_spin),
        "in_air": in_air,
        "force": force,
        "off_centre": off_centre,
        "integrity": integrity_over_time(force, thresholds),
        "finite": finite,
        "phase": phase,
    }
