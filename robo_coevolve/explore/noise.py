"""Temporally correlated exploration noise: Ornstein-Uhlenbeck and pink (1/f) noise.

White noise on 50 Hz position targets averages out before the spatula moves; correlated noise
makes excursions that last long enough to matter. Pink noise (power spectral density ~ 1/f, drawn
with the ``colorednoise`` package) mixes slow drifts and quick jitters and is the default
(Eberhard et al., "Pink noise is all you need", ICLR 2023); OU noise is the classic alternative.

A ``NoiseSpec`` is a picklable description; ``sample(rng, steps)`` draws a whole episode's
sequence at once, so the noise of a trial depends only on its own generator, never on how trials
are split across workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import colorednoise
import numpy as np

KINDS = ("pink", "ou", "white")


def pink_noise(rng: np.random.Generator, steps: int, dim: int, exponent: float = 1.0) -> np.ndarray:
    """(steps, dim) Gaussian noise with power spectral density ~ 1/f**exponent and unit variance."""
    return colorednoise.powerlaw_psd_gaussian(exponent, (dim, steps), random_state=rng).T


def ou_noise(rng: np.random.Generator, steps: int, dim: int, correlation_steps: float = 10.0) -> np.ndarray:
    """(steps, dim) stationary Ornstein-Uhlenbeck noise with unit variance whose correlation decays
    by 1/e over ``correlation_steps`` steps; it starts from the stationary distribution."""
    decay = np.exp(-1.0 / correlation_steps)
    shocks = rng.standard_normal((steps, dim)) * np.sqrt(1.0 - decay**2)
    out = np.empty((steps, dim))
    x = rng.standard_normal(dim)
    for t in range(steps):
        x = decay * x + shocks[t]
        out[t] = x
    return out


@dataclass(frozen=True)
class NoiseSpec:
    """Correlated action noise: ``temperature * scale * unit_noise``.

    Args:
        kind: "pink", "ou" or "white".
        temperature: overall standard deviation in normalised action units (0 = no noise).
        scale: per-action-dimension multipliers (x, y, z, pitch, roll); e.g. a small z scale keeps
            a pushing blade on the pan.
        correlation_steps: OU only, steps over which correlation decays by 1/e.
        exponent: pink only, the spectral exponent (1 = pink, 2 = brown/red).
    """

    kind: str = "pink"
    temperature: float = 0.1
    scale: Sequence[float] = (1.0, 1.0, 1.0, 1.0, 1.0)
    correlation_steps: float = 10.0
    exponent: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"noise kind {self.kind!r} is unknown: choose one of {', '.join(KINDS)}")
        if not np.isfinite(self.temperature) or self.temperature < 0:
            raise ValueError(f"noise temperature={self.temperature} must be a finite number >= 0")
        scale = tuple(float(s) for s in self.scale)
        if any(s < 0 or not np.isfinite(s) for s in scale):
            raise ValueError(f"noise scale={scale} must be finite and >= 0")
        object.__setattr__(self, "scale", scale)
        if self.correlation_steps <= 0:
            raise ValueError(f"noise correlation_steps={self.correlation_steps} must be > 0")

    def sample(self, rng: np.random.Generator, steps: int) -> np.ndarray:
        """(steps, len(scale)) float64 noise for one episode."""
        dim = len(self.scale)
        if self.temperature == 0 or steps == 0:
            return np.zeros((steps, dim))
        if self.kind == "pink":
            unit = pink_noise(rng, steps, dim, self.exponent)
        elif self.kind == "ou":
            unit = ou_noise(rng, steps, dim, self.correlation_steps)
        else:
            unit = rng.standard_normal((steps, dim))
        return unit * (self.temperature * np.asarray(self.scale))
