"""ExploreSchedule: how an iteration's trials are split between motion primitives and the policy.

A skill starts from nothing, so its first iteration searches motion primitives (mixture CEM).
While the policy has no grip on the skill (closed-loop success below ``grip``), later iterations
keep drawing primitive trials around the modes the search found, on fresh tasks. Once the policy
has grip, most trials are the policy's own episodes with correlated noise at a few temperatures:
their successes are what the policy does, nudged, on the states it actually visits, which is
what closes the gap between cloned and closed-loop behaviour (the DAgger idea, judged by physics
instead of an expert). ``primitive_share`` of the trials stay primitives throughout, so the
library keeps the search's distinct solutions.

With co-evolution the same rule also holds per task variant (``primitive_chance``): a variant the
policy has no grip on (its episodes there succeeded less than ``grip`` of the time) runs
``weak_variant_share`` of its trials as primitives, and keeps probing it with the policy; which
of the search's modes a variant's primitive trials are drawn around is learnt per variant
(``PoolEntry.choose_modes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robo_coevolve.explore.noise import KINDS, NoiseSpec


@dataclass(frozen=True)
class ExploreSchedule:
    """Trials per iteration and their split; see the module docstring.

    Args:
        trials: trials per iteration after the first search.
        grip: policy success rate from which policy episodes are run.
        primitive_share: share of the trials that stay primitives once the policy has grip.
        primitive_jitter: standard deviation (unit-cube units) around a mode for primitive trials.
        noise_kind: the policy episodes' noise ("pink", "ou" or "white").
        temperatures: noise temperatures, assigned to the policy episodes in turn.
        noise_scale: per-action multipliers (x, y, z, pitch, roll); a small z keeps a pushing
            blade on the pan (scooping tolerates little height error).
        weak_variant_share: share of the trials that are primitives on a task variant the policy
            has no grip on (co-evolution's pool; ``primitive_chance``).
    """

    trials: int = 300
    grip: float = 0.2
    primitive_share: float = 0.2
    primitive_jitter: float = 0.03
    noise_kind: str = "pink"
    temperatures: Sequence[float] = (0.0, 0.005, 0.01)
    noise_scale: Sequence[float] = (1.0, 1.0, 0.3, 1.0, 1.0)
    weak_variant_share: float = 0.8

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError(f"explore.schedule.trials={self.trials} must be >= 1")
        for name in ("grip", "primitive_share", "weak_variant_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"explore.schedule.{name}={getattr(self, name)} must be in [0, 1]")
        if self.primitive_jitter < 0:
            raise ValueError(f"explore.schedule.primitive_jitter={self.primitive_jitter} must be >= 0")
        if self.noise_kind not in KINDS:
            raise ValueError(
                f"explore.schedule.noise_kind={self.noise_kind!r}: choose one of {', '.join(KINDS)}"
            )
        object.__setattr__(self, "temperatures", tuple(float(t) for t in self.temperatures))
        object.__setattr__(self, "noise_scale", tuple(float(s) for s in self.noise_scale))
        if not self.temperatures:
            raise ValueError("explore.schedule.temperatures is empty: give at least one (0 = no noise)")
        for t in self.temperatures:
            NoiseSpec(self.noise_kind, t, self.noise_scale)  # validates each

    def split(self, policy_success: float | None) -> tuple[int, int]:
        """(primitive trials, policy episodes) of an iteration whose policy last scored
        ``policy_success`` (None: there is no policy for this skill yet)."""
        if policy_success is None or policy_success < self.grip:
            return self.trials, 0
        n_primitive = int(round(self.primitive_share * self.trials))
        return n_primitive, self.trials - n_primitive

    @staticmethod
    def shrink(n_primitive: int, n_policy: int, total: int) -> tuple[int, int]:
        """(primitive trials, policy episodes) cut down to ``total`` in the same proportion
        (unchanged when ``total`` is not less than their sum)."""
        if total >= n_primitive + n_policy:
            return n_primitive, n_policy
        kept = int(round(n_primitive * total / (n_primitive + n_policy)))
        return kept, total - kept

    def primitive_chance(self, variant_success: float | None) -> float:
        """Chance that a trial on a task variant is a primitive (the node's policy has grip):
        ``weak_variant_share`` where the policy's episodes on the variant last succeeded less
        than ``grip`` of the time, else (or before any ran there) ``primitive_share``."""
        if variant_success is not None and variant_success < self.grip:
            return self.weak_variant_share
        return self.primitive_share

    def as_primitive(self, variant_success: Sequence[float | None], rng: np.random.Generator) -> np.ndarray:
        """(n,) bool: which of n trials run as primitives, one per drawn task, given the policy's
        last success on each task's variant (``primitive_chance``)."""
        chance = np.array([self.primitive_chance(s) for s in variant_success], np.float64)
        return rng.uniform(size=len(chance)) < chance

    def noise(self, episode: int) -> NoiseSpec | None:
        """The noise of the ``episode``-th policy episode of an iteration (None: noise-free)."""
        t = self.temperatures[episode % len(self.temperatures)]
        return NoiseSpec(self.noise_kind, t, self.noise_scale) if t > 0 else None

    def primitive_params(
        self, modes: Sequence[np.ndarray], n: int, rng: np.random.Generator, which: np.ndarray | None = None
    ) -> np.ndarray:
        """``n`` unit-cube parameter vectors around ``modes`` (in turn, or the mode indices
        ``which``), jittered and clipped."""
        if not len(modes):
            raise ValueError("primitive trials need the modes of an earlier search")
        which = np.arange(n) % len(modes) if which is None else np.asarray(which, int)
        centres = np.asarray(modes, np.float64)[which]
        jitter = rng.normal(0.0, self.primitive_jitter, size=centres.shape)
        return np.clip(centres + jitter, 0.0, 1.0)
