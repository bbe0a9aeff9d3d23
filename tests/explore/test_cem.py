"""Mixture CEM on a toy problem with two separate optima (like the two flip directions)."""

import numpy as np
import pytest

from robo_coevolve.explore.cem import MixtureCEM

A = np.full(4, 0.2)
B = np.full(4, 0.8)


def two_peaks(x: np.ndarray) -> np.ndarray:
    """Score near 1 within ~0.1 of A or of B, ~0 in between (the average of A and B fails)."""
    d = np.minimum(np.linalg.norm(x - A, axis=1), np.linalg.norm(x - B, axis=1))
    return np.exp(-((d / 0.15) ** 2))


def search(generations=25, **kwargs):
    cem = MixtureCEM(4, np.random.default_rng(0), population=60, **kwargs)
    for _ in range(generations):
        x, labels = cem.ask()
        s = two_peaks(x)
        cem.tell(x, labels, s, successes=s > 0.8)
    return cem


def test_keeps_both_modes_apart_and_each_solves():
    cem = search()
    means = np.stack([m.mean for m in cem.modes])
    near_a = np.linalg.norm(means - A, axis=1).min()
    near_b = np.linalg.norm(means - B, axis=1).min()
    assert near_a < 0.08 and near_b < 0.08, means
    for m in cem.modes:  # no mode sits in the failing middle
        assert two_peaks(m.mean[None])[0] > 0.8
    assert cem.best_mode().success > 0.8


def test_single_mode_commits_to_one_peak_instead_of_averaging():
    cem = search(max_modes=1)
    mean = cem.best_mode().mean
    assert two_peaks(mean[None])[0] > 0.8, mean
    assert np.linalg.norm(mean - 0.5) > 0.4  # not the average of the peaks


def test_first_generation_samples_the_prior_and_later_ones_the_modes():
    cem = MixtureCEM(4, np.random.default_rng(1), population=40)
    x, labels = cem.ask()
    assert (labels == -1).all() and x.min() >= 0 and x.max() <= 1
    cem.tell(x, labels, two_peaks(x))
    x, labels = cem.ask()
    assert len(x) == 40 and (labels >= 0).sum() >= 30 and (labels == -1).sum() == 4


def test_started_from_a_point_it_samples_only_there_and_climbs_to_the_nearest_peak():
    cem = MixtureCEM(4, np.random.default_rng(2), population=40, max_modes=1, init_std=0.05, explore_frac=0.0)
    start = np.full(4, 0.3)  # near A, on the slope
    cem.start_from(start)
    x, labels = cem.ask()
    assert (labels == 0).all() and np.abs(x - start).max() < 0.3  # no prior samples, all around start
    for _ in range(15):
        cem.tell(x, labels, two_peaks(x))
        x, labels = cem.ask()
    assert np.linalg.norm(cem.modes[0].mean - A) < 0.05, cem.modes[0].mean
    with pytest.raises(ValueError, match="start_from"):
        cem.start_from(np.zeros((2, 4)))  # more means than max_modes
    with pytest.raises(ValueError, match="start_from"):
        cem.start_from(np.zeros(3))


def test_same_seed_same_search():
    a, b = search(generations=5), search(generations=5)
    for ma, mb in zip(a.modes, b.modes, strict=True):
        np.testing.assert_array_equal(ma.mean, mb.mean)


def test_spread_never_falls_below_the_floor():
    cem = search(min_std=0.03)
    assert all((m.std >= 0.03).all() for m in cem.modes)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="population"):
        MixtureCEM(3, np.random.default_rng(0), population=4, max_modes=3)
    with pytest.raises(ValueError, match="elite_frac"):
        MixtureCEM(3, np.random.default_rng(0), elite_frac=0.0)
    cem = MixtureCEM(3, np.random.default_rng(0), population=10)
    x, labels = cem.ask()
    with pytest.raises(ValueError, match="same length"):
        cem.tell(x, labels[:-1], np.zeros(len(x)))
