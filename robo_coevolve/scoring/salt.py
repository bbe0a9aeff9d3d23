"""Per-step events of the salt in a season, from the grain sensors of the season scene.

A season's record has, beside the egg's sensors, each grain's position in the egg's frame and the
shaker's pose (``robo_coevolve.env.salt``). From them, per step and vectorised over time:

- a grain is **dispensed** once it is outside the shaker's cup;
- it lies **on the egg** when it is over the white (within the rim radius of the egg's axis) and
  above the egg's middle on the side now facing up, less than ``SALT_ON_EGG_HEIGHT`` above it;
- it **spilled** when it is dispensed and off the plate (on the pan, the floor, or falling there);
- it is **moving** when it moved more than ``Thresholds.salt_still`` m since the last step;
- the egg's **cells** are the 1 cm squares of its own frame, counted when a grain on the egg lies in
  one (the salt is spread, not heaped).

The thresholds that turn these into a verdict are ``Thresholds.salt_*``, measured by
``tests/scoring/test_salt.py``.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.scoring.thresholds import Thresholds
from robo_coevolve.task_spec import (
    EGG_RIM_RADIUS,
    GRAINS,
    HOLE_RADIUS,
    PLATE_CENTRE,
    PLATE_RADIUS,
    SHAKER_HEIGHT,
    SHAKER_RADIUS,
    SHAKER_WALL,
)

EGG_MID_HEIGHT = 0.00375  # m: half the white's thickness at egg_size 1, in the egg's frame
SALT_ON_EGG_HEIGHT = 0.02  # m above the egg's middle: higher is not lying on it
SALT_ON_EGG_RADIUS = 1.1 * EGG_RIM_RADIUS  # m from the egg's axis: the white's rim, egg sizes to 1.1
SALT_CELL = 0.01  # m, side of the egg's cells
GRIP_HELD = 0.002  # m between the shaker's base and the blade centre: the shaker is held
_CELLS_PER_SIDE = 2 * int(np.ceil(SALT_ON_EGG_RADIUS / SALT_CELL)) + 1
_CUP_RADIUS = SHAKER_RADIUS + SHAKER_WALL
_CUP_DEPTH = SHAKER_HEIGHT + 2 * SHAKER_WALL + 0.003  # m from the hole down to the base's bottom


def has_grains(record: dict[str, np.ndarray]) -> bool:
    """Whether ``record`` is a season scene's (it has the grain sensors)."""
    return "grain0" in record


def _rotations(quat: np.ndarray) -> np.ndarray:
    """(T, 4) unit quaternions (w, x, y, z) -> (T, 3, 3) rotation matrices."""
    w, x, y, z = (quat[:, i] for i in range(4))
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=1,
    )


def salt_events(
    record: dict[str, np.ndarray], up_z: np.ndarray, thresholds: Thresholds
) -> dict[str, np.ndarray]:
    """The salt's events per step, each a (T,) array (``up_z``: the egg's ``step_events`` value).

    Keys: ``salt_dispensed``, ``salt_on_egg``, ``salt_spilled``, ``salt_moving`` (grain counts),
    ``salt_cells`` (cells of the egg with a grain on them), ``shaker_grip`` (m from the blade's
    centre to the shaker's base), ``shaker_held`` (the spatula holds the shaker),
    ``shaker_inverted`` (its hole points down), ``hole_to_egg`` (m from the hole to the egg's axis,
    in the horizontal).
    """
    local = np.nan_to_num(np.stack([record[f"grain{i}"] for i in range(GRAINS)], axis=1))  # (T, G, 3)
    egg_pos = np.nan_to_num(record["egg_pos"])
    egg_rot = _rotations(np.nan_to_num(record["egg_quat"]))  # a NaN row: the identity
    world = egg_pos[:, None, :] + np.einsum("tij,tgj->tgi", egg_rot, local)  # from the pan centre
    hole = np.nan_to_num(record["shaker_pos"])
    shaker_rot = _rotations(np.nan_to_num(record["shaker_quat"]))
    in_shaker = np.einsum("tji,tgj->tgi", shaker_rot, world - hole[:, None, :])
    inside = (np.hypot(in_shaker[..., 0], in_shaker[..., 1]) < _CUP_RADIUS) & (
        (in_shaker[..., 2] < HOLE_RADIUS) & (in_shaker[..., 2] > -_CUP_DEPTH)
    )
    dispensed = ~inside
    facing = np.where(np.nan_to_num(up_z, nan=1.0) >= 0, 1.0, -1.0)[:, None]
    above = (local[..., 2] - EGG_MID_HEIGHT) * facing
    on_egg = (
        dispensed
        & (np.hypot(local[..., 0], local[..., 1]) < SALT_ON_EGG_RADIUS)
        & (above > 0)
        & (above < SALT_ON_EGG_HEIGHT)
    )
    on_plate = (
        np.hypot(world[..., 0] - PLATE_CENTRE[0], world[..., 1] - PLATE_CENTRE[1]) < PLATE_RADIUS + 0.01
    )
    spilled = dispensed & ~on_egg & ~(on_plate & (world[..., 2] > -0.01))
    step = np.linalg.norm(np.diff(world, axis=0, prepend=world[:1]), axis=-1)
    moving = dispensed & (step > thresholds.salt_still)

    half = _CELLS_PER_SIDE // 2
    ix = np.clip(np.floor(local[..., 0] / SALT_CELL).astype(int) + half, 0, _CELLS_PER_SIDE - 1)
    iy = np.clip(np.floor(local[..., 1] / SALT_CELL).astype(int) + half, 0, _CELLS_PER_SIDE - 1)
    occupied = np.zeros((len(local), _CELLS_PER_SIDE * _CELLS_PER_SIDE), bool)
    t, g = np.nonzero(on_egg)
    occupied[t, ix[t, g] * _CELLS_PER_SIDE + iy[t, g]] = True

    egg_axis = egg_pos + egg_rot[:, :, 2] * EGG_MID_HEIGHT
    grip = np.linalg.norm(np.nan_to_num(record["shaker_grip"], nan=1.0), axis=1)
    return {
        "salt_dispensed": dispensed.sum(1),
        "salt_on_egg": on_egg.sum(1),
        "salt_spilled": spilled.sum(1),
        "salt_moving": moving.sum(1),
        "salt_cells": occupied.sum(1),
        "shaker_grip": grip,
        "shaker_held": grip < GRIP_HELD,
        "shaker_inverted": shaker_rot[:, 2, 2] < 0,
        "hole_to_egg": np.hypot(*(hole[:, :2] - egg_axis[:, :2]).T),
    }


def seasoned(ev: dict[str, np.ndarray], thresholds: Thresholds) -> np.ndarray:
    """Per step, whether the salt meets the season's bar at that instant: a pinch dispensed, all of
    it landed, enough of it on the egg over enough cells, little spilled."""
    n = ev["salt_dispensed"]
    share = np.maximum(n, 1)
    return (
        (n >= thresholds.salt_min)
        & (n <= thresholds.salt_max)
        & (ev["salt_moving"] == 0)
        & (ev["salt_on_egg"] >= thresholds.salt_on_egg * share)
        & (ev["salt_cells"] >= thresholds.salt_cells)
        & (ev["salt_spilled"] <= thresholds.salt_spill * share)
    )
