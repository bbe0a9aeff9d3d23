"""TaskDistribution: draws concrete TaskSpecs around a base task, one per trial.

A TaskSpec already carries the ranges its start state is drawn from at reset (egg pose, spatula
pose, ...). What varies the *physics* of a task (egg mass, frictions) is a single value per
TaskSpec, so a distribution over those lives here: each ``sample`` returns a TaskSpec with its own
egg mass and frictions drawn around the base values, and its own reset seed. A trial is then fully
described by the drawn TaskSpec (its ``seed`` is the reset seed) plus what the explorer does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_coevolve.task_spec import TaskSpec, TaskSpecError

_SEED_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class TaskDistribution:
    """Tasks around ``base``: egg mass and frictions scaled by a uniform factor in
    ``1 +- *_range`` (relative half-widths), a fresh reset seed each.

    Build the usual one with :meth:`for_skill`: egg pose +-2 cm and mass +-20%.
    """

    base: TaskSpec
    egg_mass_range: float = 0.2
    friction_range: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.base, dict):
            object.__setattr__(self, "base", TaskSpec.from_dict(self.base))
        for name in ("egg_mass_range", "friction_range"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise TaskSpecError(f"TaskDistribution.{name}={value} must be in [0, 1) (relative)")
        # Fail now, not in the middle of a batch, if the extremes leave TaskSpec's valid ranges.
        for sign in (-1.0, 1.0):
            self._draw(1.0 + sign * self.egg_mass_range, 1.0 + sign * self.friction_range, 0)

    @classmethod
    def for_skill(
        cls,
        skill: str,
        egg_offset_range: float = 0.02,
        egg_mass_range: float = 0.2,
        friction_range: float = 0.0,
        **overrides: Any,
    ) -> TaskDistribution:
        """The skill's default task with the egg's start position drawn within +-``egg_offset_range``
        m and its mass within +-``egg_mass_range`` (relative)."""
        base = TaskSpec.for_skill(skill, egg_offset_range=egg_offset_range, **overrides)
        return cls(base, egg_mass_range=egg_mass_range, friction_range=friction_range)

    @property
    def skill(self) -> str:
        return self.base.skill

    def sample(self, rng: np.random.Generator) -> TaskSpec:
        mass, friction = 1.0 + rng.uniform(-1.0, 1.0, size=2) * (self.egg_mass_range, self.friction_range)
        return self._draw(mass, friction, int(rng.integers(_SEED_LIMIT)))

    def sample_many(self, rng: np.random.Generator, n: int) -> list[TaskSpec]:
        return [self.sample(rng) for _ in range(n)]

    def _draw(self, mass_scale: float, friction_scale: float, seed: int) -> TaskSpec:
        b = self.base
        return dataclasses.replace(
            b,
            egg_mass=b.egg_mass * mass_scale,
            egg_pan_friction=b.egg_pan_friction * friction_scale,
            egg_blade_friction=b.egg_blade_friction * friction_scale,
            seed=seed,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": self.base.to_dict(),
            "egg_mass_range": self.egg_mass_range,
            "friction_range": self.friction_range,
        }
