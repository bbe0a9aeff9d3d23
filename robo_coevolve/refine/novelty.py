"""Novelty: how different a segment is from what the library already holds.

A segment is described by a fixed-length feature vector: its blade path (pose after every step,
resampled to ``PATH_POINTS`` points, positions relative to where the egg started, in units of
``POSITION_SCALE`` m, angles in rad) and its task (egg start offset in units of 2 cm, egg mass
relative to 50 g in units of 20%). The same motion on a clearly different task is new data; the
same motion on nearly the same task is a near-duplicate. The distance of two feature vectors
counts the two parts alike: ``sqrt(path_ms + task_ms)``, the mean squared difference over the
path's values plus that over the task's (an RMS over all of them drowns the few task values, and
one motion run on tasks across the whole range looks like one segment). A segment's novelty is
its distance to the nearest stored one.

``NoveltyGate`` ranks candidates by ``score = success - penalty * similarity`` (similarity =
``exp(-novelty / scale)``) and admits them in that order only while each is at least
``min_distance`` from the library and from the candidates already admitted (the info-gain gate):
two flips rolling opposite ways are far apart and both get in, a hundred copies of one do not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robo_coevolve.segment import Segment

PATH_POINTS = 16
TASK_FEATURES = 3  # the last values of a feature vector; the rest is the path
POSITION_SCALE = 0.05  # m
NOMINAL_MASS = 0.05  # kg


def segment_features(segment: Segment) -> np.ndarray:
    """(PATH_POINTS * 5 + 3,) float64 feature vector of a segment."""
    pose = np.asarray(segment.proprio[:, :5], np.float64)
    egg0 = np.asarray(segment.egg[0, :3], np.float64)
    rel = pose.copy()
    rel[:, :3] = (pose[:, :3] - egg0) / POSITION_SCALE
    s = np.linspace(0.0, 1.0, len(rel))
    grid = np.linspace(0.0, 1.0, PATH_POINTS)
    path = np.stack([np.interp(grid, s, rel[:, k]) for k in range(5)], axis=1)
    task = np.array([egg0[0] / 0.02, egg0[1] / 0.02, (segment.task.egg_mass / NOMINAL_MASS - 1.0) / 0.2])
    return np.concatenate([path.ravel(), task])


def distances(features: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """Distance of ``features`` (F,) to each row of ``bank`` (N, F): ``sqrt(path_ms + task_ms)``
    (module docstring)."""
    bank = np.asarray(bank, np.float64).reshape(-1, len(features))
    sq = (bank - np.asarray(features, np.float64)) ** 2
    return np.sqrt(sq[:, :-TASK_FEATURES].mean(1) + sq[:, -TASK_FEATURES:].mean(1))


@dataclass(frozen=True)
class NoveltyGate:
    """Admit segments that add information; see the module docstring.

    Args:
        min_distance: least RMS feature distance to every stored and admitted segment.
        penalty: lambda in ``score = success - lambda * similarity``.
        scale: distance at which similarity has fallen to 1/e.
    """

    min_distance: float = 0.1
    penalty: float = 0.5
    scale: float = 0.3

    def __post_init__(self) -> None:
        if self.min_distance < 0 or self.penalty < 0 or self.scale <= 0:
            raise ValueError(
                f"novelty gate needs min_distance >= 0, penalty >= 0 and scale > 0, got "
                f"{self.min_distance}, {self.penalty}, {self.scale}"
            )

    def novelty(self, features: np.ndarray, bank: np.ndarray) -> float:
        """Distance to the nearest row of ``bank`` (inf for an empty bank)."""
        d = distances(features, bank)
        return float(d.min()) if len(d) else float("inf")

    def score(self, success: bool, novelty: float) -> float:
        return float(success) - self.penalty * float(np.exp(-novelty / self.scale))

    def admit(
        self, segments: list[Segment], bank: np.ndarray | None = None
    ) -> tuple[list[Segment], list[Segment]]:
        """``(admitted, rejected)``; admitted segments get ``meta`` entries ``features``,
        ``novelty`` and ``novelty_score``."""
        feats = [segment_features(s) for s in segments]
        dim = len(feats[0]) if feats else PATH_POINTS * 5 + 3
        bank = np.zeros((0, dim)) if bank is None else np.asarray(bank, np.float64).reshape(-1, dim)
        scored = [
            (self.score(s.success, self.novelty(f, bank)), i)
            for i, (s, f) in enumerate(zip(segments, feats, strict=True))
        ]
        admitted, rejected = [], []
        for _, i in sorted(scored, key=lambda x: -x[0]):
            novelty = self.novelty(feats[i], bank)
            if novelty < self.min_distance:
                rejected.append(segments[i])
                continue
            seg = segments[i]
            seg.meta.update(
                features=feats[i].tolist(),
                novelty=None if np.isinf(novelty) else novelty,
                novelty_score=self.score(seg.success, novelty),
            )
            admitted.append(seg)
            bank = np.vstack([bank, feats[i]])
        return admitted, rejected


def mean_pairwise_distance(features: np.ndarray, max_points: int = 2000, seed: int = 0) -> float:
    """The diversity of a set of segments: mean :func:`distances` over all pairs of rows of
    ``features`` (N, F) (a seeded subsample of ``max_points`` rows for large N); 0 for N < 2."""
    f = np.asarray(features, np.float64)
    if len(f) < 2:
        return 0.0
    if len(f) > max_points:
        f = f[np.random.default_rng(seed).choice(len(f), max_points, replace=False)]

    def mean_square(x: np.ndarray) -> np.ndarray:  # (N, N) mean squared difference of rows
        sq = (x**2).sum(1)
        return np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0) / x.shape[1]

    d2 = mean_square(f[:, :-TASK_FEATURES]) + mean_square(f[:, -TASK_FEATURES:])
    iu = np.triu_indices(len(f), 1)
    return float(np.sqrt(d2[iu]).mean())
