import numpy as np
import pytest

from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec, TaskSpecError


def test_draws_mass_within_range_and_a_fresh_seed_each():
    dist = TaskDistribution.for_skill("scoop")
    tasks = dist.sample_many(np.random.default_rng(0), 500)
    masses = np.array([t.egg_mass for t in tasks])
    assert masses.min() >= 0.05 * 0.8 - 1e-12 and masses.max() <= 0.05 * 1.2 + 1e-12
    assert masses.min() < 0.042 and masses.max() > 0.058  # the range is used
    assert len({t.seed for t in tasks}) > 490
    assert all(t.egg_offset_range == 0.02 and t.skill == "scoop" for t in tasks)
    assert all(t.egg_pan_friction == 1.2 for t in tasks)  # friction_range 0 leaves it alone


def test_same_generator_same_tasks():
    dist = TaskDistribution.for_skill("flip", friction_range=0.1)
    a = dist.sample_many(np.random.default_rng(7), 20)
    b = dist.sample_many(np.random.default_rng(7), 20)
    assert a == b
    assert len({t.egg_blade_friction for t in a}) == 20


def test_ranges_that_leave_valid_tasks_are_rejected_up_front():
    with pytest.raises(TaskSpecError, match="egg_mass"):
        TaskDistribution(TaskSpec.for_skill("scoop", egg_mass=0.015), egg_mass_range=0.5)
    with pytest.raises(TaskSpecError, match="friction_range"):
        TaskDistribution(TaskSpec.for_skill("scoop"), friction_range=1.5)
    with pytest.raises(TaskSpecError, match="egg_offset"):
        TaskDistribution.for_skill("flip", egg_offset_range=0.05)
