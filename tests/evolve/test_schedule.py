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


def test_shrink_keeps_the_split_in_proportion():
    assert ExploreSchedule.shrink(60, 240, 300) == (60, 240)
    assert ExploreSchedule.shrink(60, 240, 1000) == (60, 240)
    assert ExploreSchedule.shrink(60, 240, 150) == (30, 120)
    assert ExploreSchedule.shrink(60, 240, 0) == (0, 0)
    assert ExploreSchedule.shrink(300, 0, 7) == (7, 0)


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


def test_a_variant_the_policy_fails_is_explored_mostly_with_primitives():
    s = ExploreSchedule(grip=0.2, primitive_share=0.2, weak_variant_share=0.8)
    assert s.primitive_chance(None) == 0.2  # the policy has not tried it: its episodes probe it
    assert s.primitive_chance(0.5) == 0.2
    assert s.primitive_chance(0.05) == 0.8
    rng = np.random.default_rng(0)
    routed = s.as_primitive([0.9] * 2000 + [0.0] * 2000, rng)
    assert abs(routed[:2000].mean() - 0.2) < 0.03 and abs(routed[2000:].mean() - 0.8) < 0.03
    with pytest.raises(ValueError, match="weak_variant_share"):
        ExploreSchedule(weak_variant_share=1.5)


def test_primitive_params_go_around_the_modes_asked_for():
    s = ExploreSchedule(primitive_jitter=0.0)
    modes = [np.full(primitives.dim(), v) for v in (0.2, 0.5, 0.8)]
    p = s.primitive_params(modes, 4, np.random.default_rng(0), which=np.array([2, 2, 0, 1]))
    assert p[:, 0].tolist() == [0.8, 0.8, 0.2, 0.5]
