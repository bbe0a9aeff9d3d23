"""The explore schedule: primitives until the policy has grip, then mostly the policy's episodes."""

import numpy as np
import pytest

from robo_coevolve.evolve import ExploreSchedule
from robo_coevolve.explore import primitives


def test_split_follows_the_policy_grip():
    s = ExploreSchedule(trials=100, grip=0.2, primitive_share=0.25)
    assert s.split(None) == (100, 0)  # no policy yet
    assert s.split(0.19) == (100, 0)
    assert s.split(0.2) == (25, 75)
    assert s.split(1.0) == (25, 75)


def test_noise_cycles_the_temperatures_and_zero_means_noise_free():
    s = ExploreSchedule(temperatures=[0.0, 0.05], noise_scale=[1, 1, 0.2, 1, 1])
    assert s.noise(0) is None
    assert s.noise(1).temperature == 0.05 and s.noise(1).scale[2] == 0.2
    assert s.noise(2) is None


def test_primitive_params_stay_near_their_modes_in_the_unit_cube():
    s = ExploreSchedule(primitive_jitter=0.02)
    modes = [np.full(primitives.dim(), 0.5), np.full(primitives.dim(), 0.999)]
    p = s.primitive_params(modes, 10, np.random.default_rng(0))
    assert p.shape == (10, primitives.dim()) and (p >= 0).all() and (p <= 1).all()
    assert np.abs(p[0::2] - 0.5).max() < 0.1 and np.abs(p[1::2] - 0.999).max() < 0.1  # modes in turn
    assert np.abs(p[0::2] - 0.5).std() > 0.005  # jittered
    with pytest.raises(ValueError, match="modes"):
        s.primitive_params([], 3, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"trials": 0}, "trials"),
        ({"grip": 1.5}, "grip"),
        ({"noise_kind": "blue"}, "noise_kind"),
        ({"temperatures": []}, "temperatures"),
        ({"temperatures": [-1]}, "temperature"),
    ],
)
def test_bad_settings_name_the_field(kwargs, word):
    with pytest.raises(ValueError, match=word):
        ExploreSchedule(**kwargs)
