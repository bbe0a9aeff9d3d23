"""Success outcomes per task, paired margins between arms run on the same tasks, and success by
egg mass."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def outcomes(trajectories: Sequence) -> np.ndarray:
    """Each trajectory's success, in task order."""
    return np.array([t.success for t in trajectories], bool)


def rate(trajectories: Sequence) -> float:
    """The share of ``trajectories`` that succeeded (0 for none)."""
    return float(np.mean([t.success for t in trajectories])) if len(trajectories) else 0.0


def paired_margin(ours: np.ndarray, theirs: np.ndarray) -> dict:
    """``ours - theirs`` success rate over the same tasks, its 95% interval (normal
    approximation of the paired differences) and the tasks only one side solved. ``theirs`` may
    hold several policies' outcomes (one row each): a task then counts as the share of them that
    solved it, and as theirs where any did."""
    theirs = np.atleast_2d(theirs)
    d = ours.astype(float) - theirs.mean(axis=0)
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {
        "margin": float(d.mean()),
        "interval": [float(d.mean() - half), float(d.mean() + half)],
        "only ours": int(np.sum(ours & ~theirs.any(axis=0))),
        "only theirs": int(np.sum(~ours & theirs.any(axis=0))),
    }


def by_mass(masses: np.ndarray, runs: dict[str, np.ndarray], bins: int = 5) -> dict:
    """Each arm's success within each ``bins``-quantile of the tasks' egg masses (a 2-D arm, one
    row per policy, by the mean of its rows): where on the node's mass range the failures lie."""
    edges = np.quantile(masses, np.linspace(0.0, 1.0, bins + 1))
    which = np.clip(np.searchsorted(edges, masses, side="right") - 1, 0, bins - 1)
    return {
        "edges (kg)": edges.tolist(),
        **{arm: [float(o[..., which == b].mean()) for b in range(bins)] for arm, o in runs.items()},
    }
