import numpy as np
import pytest

from robo_coevolve.explore.noise import NoiseSpec, ou_noise, pink_noise


def autocorrelation(x: np.ndarray, lag: int) -> float:
    return float(np.mean([np.corrcoef(x[:-lag, d], x[lag:, d])[0, 1] for d in range(x.shape[1])]))


def test_pink_noise_is_correlated_in_time_with_unit_variance():
    x = pink_noise(np.random.default_rng(0), 4000, 5)
    assert x.shape == (4000, 5)
    assert 0.8 < x.std() < 1.2
    assert autocorrelation(x, 5) > 0.3
    white = np.random.default_rng(0).standard_normal((4000, 5))
    assert abs(autocorrelation(white, 5)) < 0.05


def test_ou_noise_decorrelates_by_1_over_e_at_its_correlation_time():
    x = ou_noise(np.random.default_rng(0), 20000, 3, correlation_steps=10.0)
    assert 0.9 < x.std() < 1.1
    assert autocorrelation(x, 10) == pytest.approx(np.exp(-1), abs=0.05)


@pytest.mark.parametrize("kind", ["pink", "ou", "white"])
def test_temperature_and_scale_set_the_spread_and_the_seed_fixes_the_draw(kind):
    spec = NoiseSpec(kind=kind, temperature=0.2, scale=(1, 1, 0.1, 1, 0))
    x = spec.sample(np.random.default_rng(3), 3000)
    assert x.std(axis=0)[0] == pytest.approx(0.2, rel=0.25)
    assert x.std(axis=0)[2] == pytest.approx(0.02, rel=0.25)
    assert (x[:, 4] == 0).all()
    np.testing.assert_array_equal(x, spec.sample(np.random.default_rng(3), 3000))
    assert not np.array_equal(x, spec.sample(np.random.default_rng(4), 3000))
    assert (NoiseSpec(kind=kind, temperature=0).sample(np.random.default_rng(0), 10) == 0).all()


def test_bad_noise_is_named():
    with pytest.raises(ValueError, match="kind"):
        NoiseSpec(kind="brownian")
    with pytest.raises(ValueError, match="temperature"):
        NoiseSpec(temperature=-1)
    with pytest.raises(ValueError, match="scale"):
        NoiseSpec(scale=(1, -1, 1, 1, 1))
