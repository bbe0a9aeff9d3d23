"""Mixture CEM: the cross-entropy method with one Gaussian per solution mode.

A flip succeeds rolling the egg either way, so its good parameters form (at least) two clusters;
a single Gaussian fitted to elites from both lands between them, where nothing works. This CEM
keeps up to ``max_modes`` Gaussians apart:

1. the first generation samples the prior (uniform over the unit cube);
2. modes are *seeded* at the best samples that lie at least ``mode_distance`` from each other
   (mode-seeded CEM: start from what worked, not from the average);
3. each generation, every mode samples around its own mean and is refitted to *its own* elites
   (per-mode elites: samples never vote for another mode's mean), with a floor on the spread;
4. a share of every generation (``explore_frac``) still samples the prior; a prior sample that
   beats a mode's elites far from every mode takes over the weakest mode (a restart), and modes
   that drift together are merged.

Samples are shared between modes in proportion to each mode's recent mean score, so effort goes
where it pays, while every live mode keeps at least ``min_share`` of the population.

The algorithm is pure numpy over the unit cube and knows nothing about eggs: ``ask`` returns
parameters, ``tell`` takes their scores (higher is better).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Mode:
    """One Gaussian of the mixture (diagonal covariance) and its running record."""

    mean: np.ndarray
    std: np.ndarray
    score: float = 0.0  # smoothed mean score of its recent samples
    success: float = 0.0  # smoothed success rate of its recent samples
    best: float = -np.inf
    age: int = 0  # generations since seeded


class MixtureCEM:
    """Cross-entropy search over ``[0, 1]**dim`` that keeps solution modes apart.

    Args:
        dim: number of parameters.
        rng: the generator every sample comes from (same seed, same search).
        population: samples per generation.
        elite_frac: share of a mode's samples that refit it.
        max_modes: most Gaussians kept at once.
        init_std: spread of a freshly seeded mode.
        min_std: floor on every mode's spread (keeps exploring; stops collapse on noise).
        mode_distance: RMS distance per parameter below which two points count as the same mode.
        explore_frac: share of each generation drawn from the prior after the first.
        min_share: least share of the population a live mode gets.
        smoothing: weight of the new fit against the old mean and spread (1 = no memory).
        restart_after: generations a mode gets before a better prior sample may replace it.
    """

    def __init__(
        self,
        dim: int,
        rng: np.random.Generator,
        population: int = 100,
        elite_frac: float = 0.2,
        max_modes: int = 3,
        init_std: float = 0.12,
        min_std: float = 0.02,
        mode_distance: float = 0.2,
        explore_frac: float = 0.1,
        min_share: float = 0.15,
        smoothing: float = 0.7,
        restart_after: int = 3,
    ):
        if population < 2 * max_modes:
            raise ValueError(f"population={population} must be at least 2 * max_modes={2 * max_modes}")
        if not 0 < elite_frac <= 1:
            raise ValueError(f"elite_frac={elite_frac} must be in (0, 1]")
        self.dim = dim
        self.rng = rng
        self.population = population
        self.elite_frac = elite_frac
        self.max_modes = max_modes
        self.init_std = init_std
        self.min_std = min_std
        self.mode_distance = mode_distance
        self.explore_frac = explore_frac
        self.min_share = min_share
        self.smoothing = smoothing
        self.restart_after = restart_after
        self.modes: list[Mode] = []
        self.generation = 0

    # ------------------------------------------------------------------ ask / tell
    def start_from(self, means: np.ndarray) -> None:
        """Seed the modes at ``means`` (k, dim), each with ``init_std``, instead of sampling the
        prior first: a search that refines known answers (``explore.search.PolishConfig``)."""
        means = np.atleast_2d(np.asarray(means, dtype=np.float64))
        if means.shape[1] != self.dim or not 1 <= len(means) <= self.max_modes:
            raise ValueError(
                f"start_from needs 1 to max_modes={self.max_modes} means of dim {self.dim}, got {means.shape}"
            )
        self.modes = [Mode(mean=m.copy(), std=np.full(self.dim, self.init_std)) for m in means]

    def ask(self) -> tuple[np.ndarray, np.ndarray]:
        """``(params (population, dim), labels (population,))``; label -1 marks a prior sample,
        k >= 0 a sample of mode k."""
        if not self.modes:
            return self.rng.uniform(size=(self.population, self.dim)), np.full(self.population, -1)
        n_prior = int(round(self.explore_frac * self.population))
        counts = self._shares(self.population - n_prior)
        params = [self.rng.uniform(size=(n_prior, self.dim))]
        labels = [np.full(n_prior, -1)]
        for k, (mode, n) in enumerate(zip(self.modes, counts, strict=True)):
            x = mode.mean + mode.std * self.rng.standard_normal((n, self.dim))
            params.append(np.clip(x, 0.0, 1.0))
            labels.append(np.full(n, k))
        return np.concatenate(params), np.concatenate(labels)

    def tell(
        self, params: np.ndarray, labels: np.ndarray, scores: np.ndarray, successes: np.ndarray | None = None
    ) -> None:
        """Refit the modes to the scored generation that ``ask`` returned; ``successes`` (bool)
        track each mode's success rate (default: score > 0)."""
        params, labels, scores = np.asarray(params), np.asarray(labels), np.asarray(scores, np.float64)
        successes = scores > 0 if successes is None else np.asarray(successes, bool)
        if not (len(params) == len(labels) == len(scores) == len(successes)):
            raise ValueError("params, labels, scores and successes must have the same length")
        for k, mode in enumerate(self.modes):
            mine = labels == k
            if mine.sum() >= 2:
                self._refit(mode, params[mine], scores[mine], successes[mine])
        self._seed(params[labels == -1], scores[labels == -1])
        self._merge()
        self.generation += 1

    # ------------------------------------------------------------------ results
    def best_mode(self) -> Mode | None:
        """The refitted mode with the highest recent success rate, then score (its mean is the
        search's answer)."""
        tried = [m for m in self.modes if m.age > 0] or self.modes
        return max(tried, key=lambda m: (m.success, m.score), default=None)

    def state(self) -> dict:
        """JSON-safe summary of the modes (for logs and metrics)."""
        return {
            "generation": self.generation,
            "modes": [
                {
                    "mean": m.mean.tolist(),
                    "std": m.std.tolist(),
                    "score": m.score,
                    "success": m.success,
                    "best": m.best,
                    "age": m.age,
                }
                for m in self.modes
            ],
        }

    # ------------------------------------------------------------------ internals
    def _distance(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2, axis=-1))

    def _shares(self, n: int) -> list[int]:
        weights = np.array([max(m.score, 0.0) for m in self.modes]) + 1e-3
        weights = weights / weights.sum()
        floor = min(self.min_share, 1.0 / len(self.modes))
        weights = floor + (1.0 - floor * len(self.modes)) * weights
        counts = np.floor(weights * n).astype(int)
        counts[np.argmax(weights)] += n - counts.sum()  # the leftovers go to the leader
        return counts.tolist()

    def _refit(self, mode: Mode, x: np.ndarray, s: np.ndarray, won: np.ndarray) -> None:
        n_elite = max(2, int(np.ceil(self.elite_frac * len(x))))
        elite = x[np.argsort(-s, kind="stable")[:n_elite]]
        a = self.smoothing
        mode.mean = a * elite.mean(axis=0) + (1 - a) * mode.mean
        mode.std = np.maximum(a * elite.std(axis=0) + (1 - a) * mode.std, self.min_std)
        keep = 0.0 if mode.age == 0 else 0.5
        mode.score = keep * mode.score + (1 - keep) * float(s.mean())
        mode.success = keep * mode.success + (1 - keep) * float(won.mean())
        mode.best = max(mode.best, float(s.max()))
        mode.age += 1

    def _seed(self, x: np.ndarray, s: np.ndarray) -> None:
        """The best prior samples far from every mode start new modes while there is room; once
        full, one replaces the weakest mode only if that mode has had ``restart_after``
        generations and still scores under half the leader (a restart)."""
        for i in np.argsort(-s, kind="stable"):
            if s[i] <= 0:
                break
            if (
                self.modes
                and self._distance(np.stack([m.mean for m in self.modes]), x[i]).min() < self.mode_distance
            ):
                continue
            # A new mode earns its score from its own samples, from the next generation on.
            new = Mode(mean=x[i].copy(), std=np.full(self.dim, self.init_std), best=float(s[i]))
            if len(self.modes) < self.max_modes:
                self.modes.append(new)
                continue
            weakest = min(range(len(self.modes)), key=lambda k: self.modes[k].score)
            leader = max(m.score for m in self.modes)
            w = self.modes[weakest]
            if w.age < self.restart_after or w.score >= 0.5 * leader or s[i] <= w.score:
                break
            self.modes[weakest] = new

    def _merge(self) -> None:
        """Drop the weaker of two modes that have drifted within half ``mode_distance``."""
        keep: list[Mode] = []
        for mode in sorted(self.modes, key=lambda m: -m.score):
            if all(self._distance(mode.mean, k.mean) >= self.mode_distance / 2 for k in keep):
                keep.append(mode)
        self.modes = keep
