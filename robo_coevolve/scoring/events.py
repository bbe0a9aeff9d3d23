"""Per-step events of the egg, computed from a control-rate sensor record.

A record is a dict of sensor name -> (T, dim) array, as ``EggFlipPhysics.record`` builds it from
the scene's sensors (egg pose relative to the pan, contact flags, touch force, ...). Every function
here is pure and vectorised over time, so the same code scores a live episode and a batch of
recorded rollouts.
"""

from __future__ import annotations

import math

import numpy as np

from robo_coevolve.scoring.integrity import integrity_over_time
from robo_coevolve.scoring.salt import has_grains, salt_events
from robo_coevolve.scoring.thresholds import Thresholds
from robo_coevolve.task_spec import PLATE_CENTRE

# New phases go last: stored phase indices keep their meaning.
PHASES = ("in air", "on pan", "on blade", "pinched", "on burner", "on floor", "diverged", "on plate")


def _phase_of(
    on_blade: bool, on_pan: bool, on_burner: bool, on_floor: bool, finite: bool, on_plate: bool
) -> int:
    """Index into ``PHASES`` of one step's contact flags, the first that applies in this order
    (an egg between the blade and the pan or the plate is pinched)."""
    if not finite:
        return PHASES.index("diverged")
    if on_floor:
        return PHASES.index("on floor")
    if on_burner:
        return PHASES.index("on burner")
    if on_blade and (on_pan or on_plate):
        return PHASES.index("pinched")
    if on_blade:
        return PHASES.index("on blade")
    if on_pan:
        return PHASES.index("on pan")
    if on_plate:
        return PHASES.index("on plate")
    return PHASES.index("in air")


# ``_phase_of`` for every combination of its six flags (bit k is argument k), so that one lookup
# serves a live step and a whole record alike.
_PHASE_TABLE = np.array([_phase_of(*(bool(code >> k & 1) for k in range(6))) for code in range(64)])


def phase_index(on_blade, on_pan, on_burner, on_floor, finite, on_plate):
    """Index into ``PHASES`` of the egg's situation; works on scalars and on (T,) arrays."""
    return _PHASE_TABLE[
        1 * on_blade + 2 * on_pan + 4 * on_burner + 8 * on_floor + 16 * finite + 32 * on_plate
    ]


def fell(on_floor, height, thresholds: Thresholds):
    """The egg touched the floor, or is more than ``fall_depth`` below the pan surface (on its way
    there); floats or (T,) arrays (a NaN height counts as not below)."""
    return (on_floor > 0) | (height < -thresholds.fall_depth)


def _numbers(x: np.ndarray, all_finite: bool, nan: float = 0.0) -> np.ndarray:
    """``np.nan_to_num(x, nan=nan)``, or a plain copy where the record is known to be finite (the
    usual case, where nan_to_num changes nothing and would cost most of ``step_events``)."""
    return np.array(x) if all_finite else np.nan_to_num(x, nan=nan)


def step_events(record: dict[str, np.ndarray], thresholds: Thresholds) -> dict[str, np.ndarray]:
    """Boolean and scalar events per step, each a (T,) array.

    Keys:

    - ``height``: m of the egg's frame above the pan surface;
    - ``on_blade``, ``on_pan``, ``on_burner``, ``on_plate``: contact flags; ``on_floor``: touched
      the floor or fell below the pan (see ``fell``); ``blade_only``, ``plate_only``: the blade, the
      plate is the egg's only support; ``in_air``: no contact at all;
      ``to_plate``: m of the egg's centre from the plate's, in the horizontal;
    - ``lifted``: above ``lift_height``; ``up_z``: world z of the egg's top axis (1 upright,
      -1 upside down); ``upside_down``; ``resting``: slow relative to its support;
    - ``force``: peak normal force on the egg, N; ``integrity``: running, in [0, 1];
    - ``off_centre``: m of the egg from the centre of what holds it (the blade's centre when on
      the blade, the plate's on the plate, else the pan's);
    - ``finite``: the state was a number; ``phase``: index into ``PHASES``;
    - in a season's record, the salt's (``robo_coevolve.scoring.salt.salt_events``).
    """
    finite = np.isfinite(np.concatenate([v.reshape(len(v), -1) for v in record.values()], axis=1)).all(1)
    all_finite = bool(finite.all())
    pos = _numbers(record["egg_pos"], all_finite)
    height = pos[:, 2]
    on_blade = record["egg_on_blade"][:, 0] > 0
    on_pan = record["egg_on_pan"][:, 0] > 0
    on_floor = fell(record["egg_on_floor"][:, 0], height, thresholds)
    on_burner = record["egg_on_burner"][:, 0] > 0
    on_plate = record["egg_on_plate"][:, 0] > 0
    blade_only = on_blade & ~on_pan & ~on_floor & ~on_burner & ~on_plate
    plate_only = on_plate & ~on_blade & ~on_pan & ~on_floor & ~on_burner
    support_velocity = np.where(on_blade[:, None], record["blade_linvel"], 0.0)
    speed = np.linalg.norm(_numbers(record["egg_linvel"] - support_velocity, all_finite), axis=1)
    spin = np.linalg.norm(_numbers(record["egg_angvel"], all_finite), axis=1)
    in_air = ~(on_blade | on_pan | on_floor | on_burner | on_plate)
    force = record["egg_touch"][:, 0]
    to_plate = np.linalg.norm(pos[:, :2] - PLATE_CENTRE, axis=1)
    support_xy = np.where(on_blade[:, None], _numbers(record["blade_pos"][:, :2], all_finite), 0.0)
    off_centre = np.where(plate_only, to_plate, np.linalg.norm(pos[:, :2] - support_xy, axis=1))

    up_z = _numbers(record["egg_up"][:, 2], all_finite, nan=1.0)
    phase = phase_index(on_blade, on_pan, on_burner, on_floor, finite, on_plate)
    salt = salt_events(record, up_z, thresholds) if has_grains(record) else {}
    return {
        **salt,
        "height": height,
        "on_blade": on_blade,
        "on_pan": on_pan,
        "on_floor": on_floor,
        "on_burner": on_burner,
        "on_plate": on_plate,
        "blade_only": blade_only,
        "plate_only": plate_only,
        "to_plate": to_plate,
        "lifted": height > thresholds.lift_height,
        "up_z": up_z,
        "upside_down": up_z < thresholds.upside_down_z,
        "resting": (speed < thresholds.rest_speed) & (spin < thresholds.rest_spin),
        "in_air": in_air,
        "force": force,
        "off_centre": off_centre,
        "integrity": integrity_over_time(force, thresholds),
        "finite": finite,
        "phase": phase,
    }


def _norm3(v: list[float]) -> float:
    """``np.linalg.norm`` of a 3-vector, to the bit (numpy sums the squares in order)."""
    return math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _norm2(x: float, y: float) -> float:
    """``np.linalg.norm`` of a 2-vector, to the bit."""
    return math.sqrt(x * x + y * y)


def row_events(row: np.ndarray, columns: dict[str, int], thresholds: Thresholds) -> dict[str, float | bool]:
    """The events of ``step_events`` that ``progress`` reads, for one control-rate sensor row, in
    plain Python: a live step's events without the per-call cost of numpy on a record of one row.

    ``columns`` maps each sensor name to its first column in the row (``EggFlipPhysics.sensor_slices``
    starts). Keys: ``height``, ``on_blade``, ``on_pan``, ``on_floor``, ``on_plate``, ``blade_only``,
    ``plate_only``, ``to_plate``, ``in_air``,
    ``lifted``, ``up_z``, ``upside_down``, ``resting``, ``force`` and ``finite``, defined as in
    ``step_events``; on a non-finite row only ``finite`` and ``force`` are meaningful.
    """
    r = row.tolist()
    finite = all(map(math.isfinite, r))
    if not finite:
        r = np.nan_to_num(row).tolist()
    c = columns
    pos, lin, ang, blade_lin = c["egg_pos"], c["egg_linvel"], c["egg_angvel"], c["blade_linvel"]
    height = r[pos + 2]
    on_blade = r[c["egg_on_blade"]] > 0
    on_pan = r[c["egg_on_pan"]] > 0
    on_floor = bool(fell(r[c["egg_on_floor"]], height, thresholds))
    on_burner = r[c["egg_on_burner"]] > 0
    on_plate = r[c["egg_on_plate"]] > 0
    support = [r[blade_lin + i] for i in range(3)] if on_blade else [0.0, 0.0, 0.0]
    speed = _norm3([r[lin + i] - support[i] for i in range(3)])
    spin = _norm3(r[ang : ang + 3])
    up_z = r[c["egg_up"] + 2]
    return {
        "height": height,
        "on_blade": on_blade,
        "on_pan": on_pan,
        "on_floor": on_floor,
        "on_plate": on_plate,
        "blade_only": on_blade and not (on_pan or on_floor or on_burner or on_plate),
        "plate_only": on_plate and not (on_blade or on_pan or on_floor or on_burner),
        "to_plate": _norm2(r[pos] - PLATE_CENTRE[0], r[pos + 1] - PLATE_CENTRE[1]),
        "in_air": not (on_blade or on_pan or on_floor or on_burner or on_plate),
        "lifted": height > thresholds.lift_height,
        "up_z": up_z,
        "upside_down": up_z < thresholds.upside_down_z,
        "resting": speed < thresholds.rest_speed and spin < thresholds.rest_spin,
        "force": row[c["egg_touch"]].item(),
        "finite": finite,
    }
