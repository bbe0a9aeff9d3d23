"""TaskSpace: the bounded task parameters that co-evolution varies, as points of the unit cube.

A task variant differs from another by its egg pose (start offset on x and y), egg mass, size and
frictions, the pan height and the disturbance push. ``TaskSpace`` names those parameters with
physical bounds inside what ``TaskSpec`` validates (checked on construction), maps a TaskSpec to a
point of ``[0, 1]^d`` (``features``) and back (``task_at``), so that distances, densities and
perturbations are measured in one scale for every parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_coevolve.task_spec import TaskSpec, TaskSpecError

# name -> (low, high, unit). Each range lies inside TaskSpec's validated one; the defaults cover
# what is physically plausible for a fried egg in this scene (docs/design.md, "Measured facts":
# egg-pan friction <= 0.6 pushes the egg along, egg-blade <= 0.2 lets it slide off, so those are
# kept in reach but rare).
DEFAULT_BOUNDS: dict[str, tuple[float, float, str]] = {
    "egg_x": (-0.05, 0.05, "m"),
    "egg_y": (-0.05, 0.05, "m"),
    "egg_mass": (0.025, 0.1, "kg"),
    "egg_size": (0.8, 1.2, "scale"),
    "egg_pan_friction": (0.5, 2.0, ""),
    "egg_blade_friction": (0.25, 1.0, ""),
    "pan_height": (0.4, 0.5, "m"),
    "disturbance_force": (0.0, 0.5, "N"),
}


def _get(task: TaskSpec, name: str) -> float:
    if name == "egg_x":
        return task.egg_offset[0]
    if name == "egg_y":
        return task.egg_offset[1]
    return float(getattr(task, name))


@dataclass(frozen=True)
class TaskSpace:
    """The parameters ``names`` with ``bounds`` (name -> (low, high), SI units).

    Unknown names, empty or inverted ranges, and ranges outside TaskSpec's validation raise
    ``TaskSpecError`` naming the parameter.
    """

    bounds: Mapping[str, Sequence[float]] = field(
        default_factory=lambda: {k: v[:2] for k, v in DEFAULT_BOUNDS.items()}
    )

    def __post_init__(self) -> None:
        bounds = {}
        for name, value in dict(self.bounds).items():
            if name not in DEFAULT_BOUNDS:
                raise TaskSpecError(
                    f"coevolve task space: unknown parameter {name!r}: choose from {sorted(DEFAULT_BOUNDS)}"
                )
            low, high = (float(v) for v in value)
            if not low <= high:
                raise TaskSpecError(f"coevolve task space: {name} bounds [{low}, {high}] are inverted")
            bounds[name] = (low, high)
        object.__setattr__(self, "bounds", bounds)
        # Every corner parameter must be a valid TaskSpec value on its own (the pose's joint
        # limit with the others is checked per candidate).
        for name, (low, high) in bounds.items():
            for v in (low, high):
                try:
                    self._set(TaskSpec.for_skill("scoop", egg_offset_range=0.0), name, v)
                except TaskSpecError as e:
                    raise TaskSpecError(f"coevolve task space: {name} bound {v} is invalid: {e}") from None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.bounds)

    @property
    def dim(self) -> int:
        return len(self.bounds)

    def features(self, task: TaskSpec) -> np.ndarray:
        """(dim,) float64 position of ``task`` in the unit cube (values outside the bounds are
        outside [0, 1]; a zero-width range maps to 0.5)."""
        out = np.empty(self.dim)
        for i, (name, (low, high)) in enumerate(self.bounds.items()):
            v = _get(task, name)
            out[i] = 0.5 if high == low else (v - low) / (high - low)
        return out

    def task_at(self, base: TaskSpec, point: np.ndarray) -> TaskSpec:
        """``base`` with each parameter set from ``point`` (unit cube, clipped into it); raises
        ``TaskSpecError`` when the combination is invalid (e.g. an egg off the pan)."""
        point = np.clip(np.asarray(point, np.float64), 0.0, 1.0)
        changes: dict[str, Any] = {}
        offset = list(base.egg_offset)
        for u, (name, (low, high)) in zip(point, self.bounds.items(), strict=True):
            v = low + float(u) * (high - low)
            if name == "egg_x":
                offset[0] = v
            elif name == "egg_y":
                offset[1] = v
            else:
                changes[name] = v
        return base.replace(egg_offset=tuple(offset), **changes)

    def _set(self, task: TaskSpec, name: str, value: float) -> TaskSpec:
        if name == "egg_x":
            return task.replace(egg_offset=(value, task.egg_offset[1]))
        if name == "egg_y":
            return task.replace(egg_offset=(task.egg_offset[0], value))
        return task.replace(**{name: value})

    def to_dict(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.bounds.items()}
