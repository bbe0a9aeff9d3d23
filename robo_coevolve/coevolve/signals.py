"""Weakness signals: where the agent forgets, wavers, or has rarely been.

Pure functions of a task variant's outcome history (a sequence of (iteration, success) pairs,
oldest first) and of points in a ``TaskSpace``'s unit cube. Each returns a score in [0, 1]
(0: no sign of weakness):

- ``forgetting``: the variant was solved (success rate at least ``solved`` over an earlier window)
  and the recent window is lower; the score is the drop;
- ``boundary``: mixed outcomes, ``4 p (1 - p)`` of the recent success rate p (1 at 50%), shrunk
  towards 0 when few trials back it; ``action_spread`` turns the spread of a policy's actions
  across samples of one state into the same scale;
- ``rarity``: how seldom a region was visited, ``1 / (1 + n)`` of a Gaussian-kernel count n of
  visited points around each query point (1: never visited);
- ``deficit``: how far a variant's recent success rate falls below a reference, the rate of all
  the pool's trials over the same iterations (the same exploration noise, so the noise cancels).
  Boundary alone cannot see a variant the agent mostly fails: exploration noise puts every
  variant's rate near 50%, where boundary is flat, and a variant the agent almost always fails
  scores lower than one it wavers on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Outcomes = Sequence[tuple[int, bool]]


def _windows(outcomes: Outcomes, recent_iterations: int) -> tuple[np.ndarray, np.ndarray]:
    """(earlier successes, recent successes) split at the last ``recent_iterations`` iterations
    that have outcomes."""
    if not len(outcomes):
        return np.zeros(0, bool), np.zeros(0, bool)
    its = np.array([k for k, _ in outcomes])
    ok = np.array([s for _, s in outcomes], bool)
    seen = np.unique(its)
    if len(seen) <= recent_iterations:
        return np.zeros(0, bool), ok
    cut = seen[-recent_iterations]
    return ok[its < cut], ok[its >= cut]


def forgetting(
    outcomes: Outcomes, recent_iterations: int = 1, solved: float = 0.8, min_trials: int = 4
) -> float:
    """Drop of the success rate from the earlier iterations (when it was at least ``solved``) to
    the last ``recent_iterations``; 0 unless both windows hold ``min_trials`` outcomes."""
    earlier, recent = _windows(outcomes, recent_iterations)
    if len(earlier) < min_trials or len(recent) < min_trials:
        return 0.0
    before, now = earlier.mean(), recent.mean()
    return float(max(0.0, before - now)) if before >= solved else 0.0


def boundary(outcomes: Outcomes, recent_iterations: int = 2, prior_trials: float = 4.0) -> float:
    """``4 p (1 - p)`` of the success rate p over the last ``recent_iterations`` iterations,
    times ``n / (n + prior_trials)`` for n outcomes (one lucky trial is not a boundary)."""
    _, recent = _windows(outcomes, recent_iterations)
    n = len(recent)
    if not n:
        return 0.0
    p = recent.mean()
    return float(4.0 * p * (1.0 - p) * n / (n + prior_trials))


def recent_rate(outcome_lists: Sequence[Outcomes], recent_iterations: int = 2) -> float | None:
    """Success rate of all ``outcome_lists`` together over the last ``recent_iterations``
    iterations any of them has (None without outcomes): the reference of ``deficit``."""
    _, recent = _windows([row for outcomes in outcome_lists for row in outcomes], recent_iterations)
    return float(recent.mean()) if len(recent) else None


def deficit(
    outcomes: Outcomes, reference: float | None, recent_iterations: int = 2, prior_trials: float = 4.0
) -> float:
    """``max(0, reference - p) / reference`` for the success rate p over the last
    ``recent_iterations`` iterations, times ``n / (n + prior_trials)`` for n outcomes; 0 without
    a positive reference (nothing succeeds anywhere: no variant stands out)."""
    _, recent = _windows(outcomes, recent_iterations)
    n = len(recent)
    if not n or reference is None or reference <= 0:
        return 0.0
    return float(max(0.0, reference - recent.mean()) / reference * n / (n + prior_trials))


def action_spread(actions: np.ndarray, scale: float = 0.1) -> float:
    """Policy uncertainty from ``actions`` (S, ..., A): S sampled actions for the same state(s),
    normalised units. Returns ``1 - exp(-sigma / scale)`` of the mean per-dimension standard
    deviation sigma across the S samples."""
    a = np.asarray(actions, np.float64)
    if a.ndim < 2 or len(a) < 2:
        raise ValueError(f"action_spread needs >= 2 samples in the first axis, got shape {a.shape}")
    sigma = float(a.std(axis=0).mean())
    return float(1.0 - np.exp(-sigma / scale))


def visit_counts(points: np.ndarray, visits: np.ndarray, bandwidth: float = 0.1) -> np.ndarray:
    """(Q,) Gaussian-kernel counts of ``visits`` (N, d) around each of ``points`` (Q, d), unit-cube
    coordinates; ``bandwidth`` is the kernel's standard deviation per dimension (RMS distance)."""
    points = np.atleast_2d(np.asarray(points, np.float64))
    visits = np.asarray(visits, np.float64).reshape(-1, points.shape[1])
    if not len(visits):
        return np.zeros(len(points))
    d2 = ((points[:, None, :] - visits[None, :, :]) ** 2).mean(axis=2)
    return np.exp(-0.5 * d2 / bandwidth**2).sum(axis=1)


def rarity(points: np.ndarray, visits: np.ndarray, bandwidth: float = 0.1) -> np.ndarray:
    """(Q,) in (0, 1]: ``1 / (1 + count)`` of the kernel count of visits around each point."""
    return 1.0 / (1.0 + visit_counts(points, visits, bandwidth))


def weakness(
    outcomes: Outcomes,
    rare: float,
    weights: Sequence[float] = (1.0, 1.0, 0.5, 2.0),
    recent_iterations: int = 1,
    reference: float | None = None,
) -> dict[str, float]:
    """The signals of one variant and their weighted sum ``total``: forgetting, boundary, rare
    and deficit (below ``reference``, see ``recent_rate``) weighted by ``weights`` (three
    weights: no deficit)."""
    f = forgetting(outcomes, recent_iterations)
    b = boundary(outcomes, recent_iterations + 1)
    d = deficit(outcomes, reference, recent_iterations + 1)
    w = (*weights, 0.0)[:4]
    total = w[0] * f + w[1] * b + w[2] * float(rare) + w[3] * d
    return {"forgetting": f, "boundary": b, "rare": float(rare), "deficit": d, "total": float(total)}
