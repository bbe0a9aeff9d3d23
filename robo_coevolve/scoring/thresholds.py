"""The numbers that turn sensor readings into judgements, in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    """Scoring thresholds, SI units.

    The crack and break forces are calibrated by drop tests of the nominal egg flat onto the pan
    (``tests/scoring/test_physics_scoring.py`` re-measures them; the figures are in
    docs/design.md): a gentle landing stays below ``crack_force``, a fall from a spatula's
    height costs most of the egg.
    """

    lift_height: float = 0.03  # m above the pan surface that counts as lifted
    upside_down_z: float = -0.7  # the egg's top axis points down when its world z is below this
    rest_speed: float = 0.05  # m/s of the egg relative to what supports it
    rest_spin: float = 1.0  # rad/s
    crack_force: float = 25.0  # N: above this peak normal force the egg starts to crack
    break_force: float = 60.0  # N: at this peak the egg's integrity is 0
    min_integrity: float = 0.7  # a success needs at least this integrity
    hold_time: float = 0.2  # s: a success condition must hold over the episode's last hold_time
    # m below the pan surface: an egg this low has left the pan and the stove and is falling to
    # the floor. Counting it as fallen here ends the episode before a fast egg hits the floor
    # (such impacts can make the simulation unstable, and the verdict is already known).
    fall_depth: float = 0.05
    # Season (robo_coevolve.scoring.salt): a pinch is salt_min to salt_max grains of the shaker's
    # 120; at least salt_on_egg of them on the egg's upper face, over at least salt_cells of its
    # 1 cm cells, at most salt_spill off the plate; a grain moving more than salt_still m in a
    # control step has not landed. tests/scoring/test_salt.py measures them on scripted shakes.
    salt_min: int = 10
    salt_max: int = 60
    salt_on_egg: float = 0.5
    salt_cells: int = 4
    salt_spill: float = 0.2
    salt_still: float = 0.0005

    def __post_init__(self) -> None:
        if not 0 < self.crack_force < self.break_force:
            raise ValueError(
                f"scoring thresholds need 0 < crack_force < break_force, got "
                f"{self.crack_force} and {self.break_force}"
            )
        if self.fall_depth <= 0:
            raise ValueError(f"fall_depth={self.fall_depth} must be > 0 (m below the pan surface)")
        if not 0 < self.salt_min <= self.salt_max:
            raise ValueError(
                f"scoring thresholds need 0 < salt_min <= salt_max, got {self.salt_min} and {self.salt_max}"
            )
        for name in ("salt_on_egg", "salt_spill"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(
                    f"{name}={getattr(self, name)} must lie in [0, 1] (a share of the grains dispensed)"
                )
        if not 0 <= self.min_integrity <= 1:
            raise ValueError(f"min_integrity={self.min_integrity} must lie in [0, 1]")
