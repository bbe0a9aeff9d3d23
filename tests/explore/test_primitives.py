"""One primitive family expresses scoop, flip (either way) and catch."""

import numpy as np
import pytest

from robo_coevolve.explore import primitives
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.task_distribution import TaskDistribution

# Hand-set named parameters (the search finds its own; these show the family can express each
# skill on the randomised tasks: egg pose +-2 cm, mass +-20%).
SOLUTIONS = {
    "scoop": dict(
        approach_time=0.15,
        approach_dx=-0.125,
        approach_dz=-0.002,
        approach_pitch=0.06,
        push_distance=0.13,
        push_time=0.75,
        lift_height=0.06,
        lift_time=0.6,
        lift_pitch=-0.08,
        toss_roll=0.0,
        toss_rise=0.0,
        retreat_dx=0.0,
    ),
    "flip": dict(
        approach_time=0.2,
        approach_dx=0.0,
        approach_dy=0.0,
        approach_dz=-0.0015,
        approach_pitch=0.0,
        push_distance=0.0,
        push_time=0.05,
        lift_height=0.0,
        lift_time=0.05,
        lift_pitch=0.0,
        toss_roll=2.1,
        toss_rise=0.05,
        toss_time=0.2,
        retreat_dx=-0.12,
    ),
    "catch": dict(
        approach_time=0.1,
        approach_dx=0.0,
        approach_dy=0.0,
        approach_dz=-0.004,
        approach_pitch=0.0,
        push_distance=0.0,
        push_time=0.08,
        lift_height=-0.04,
        lift_time=0.25,
        lift_pitch=0.0,
        toss_roll=0.0,
        toss_rise=0.0,
        retreat_dx=0.0,
        meet_height=0.08,
    ),
}


@pytest.fixture(scope="module")
def sim():
    s = OpenLoopSimulator()
    yield s
    s.close()


@pytest.mark.parametrize(
    "skill, roll", [("scoop", None), ("flip", 2.1), ("flip", -2.1), ("catch", None)], ids=str
)
def test_named_parameters_solve_each_skill(sim, skill, roll):
    values = dict(SOLUTIONS[skill], **({} if roll is None else {"toss_roll": roll}))
    tasks = TaskDistribution.for_skill(skill).sample_many(np.random.default_rng(11), 4)
    results = [sim.run(Trial(t, PrimitivePlan(primitives.unit(values)))) for t in tasks]
    assert [r.outcome["reason"] for r in results] == ["success"] * 4
    if skill == "flip":  # the egg really rolled the way the wrist did
        turned = [sim.env_for(r.task).physics.record(r.sensors)["egg_angvel"][:, 0].sum() for r in results]
        assert all(np.sign(t) == np.sign(roll) for t in turned)


def test_the_average_of_the_two_flips_fails(sim):
    """Why the search keeps modes apart: halfway between rolling left and right is no roll."""
    left = primitives.unit(dict(SOLUTIONS["flip"], toss_roll=-2.1))
    right = primitives.unit(dict(SOLUTIONS["flip"], toss_roll=2.1))
    task = TaskDistribution.for_skill("flip").sample(np.random.default_rng(0))
    assert not sim.run(Trial(task, PrimitivePlan((left + right) / 2))).success


def test_unit_and_physical_are_inverse_and_clip_to_the_ranges():
    u = np.random.default_rng(0).uniform(size=primitives.dim())
    np.testing.assert_allclose(primitives.unit(primitives.physical(u)), u)
    q = primitives.physical(np.full(primitives.dim(), 2.0))
    assert [q[p.name] for p in primitives.PARAMETERS] == pytest.approx(
        [p.high for p in primitives.PARAMETERS]
    )
    with pytest.raises(ValueError, match="shape"):
        primitives.physical(np.zeros(3))
    with pytest.raises(ValueError, match="unknown primitive parameter"):
        primitives.unit({"wobble": 1.0})


def test_anchor_is_the_egg_at_rest_and_the_ballistic_crossing_in_flight():
    egg = np.zeros(13)
    egg[:3] = (0.01, -0.02, 0.0)
    np.testing.assert_allclose(primitives.anchor(egg, 0.08), egg[:3])
    egg[:3], egg[7:10] = (0.0, 0.0, 0.15), (0.2, 0.0, 0.5)
    x, _, z = primitives.anchor(egg, 0.08)
    assert z == pytest.approx(0.08)
    t = x / 0.2  # the time the egg needs to travel that far must bring it down to 0.08 m
    assert 0.15 + 0.5 * t - 0.5 * 9.81 * t * t == pytest.approx(0.08, abs=1e-9)


def test_keyframes_follow_the_phases_in_order():
    obs = {"proprio": np.zeros(15, np.float32), "egg": np.zeros(13, np.float32)}
    motion = primitives.motion(primitives.unit(SOLUTIONS["scoop"]), obs)
    assert len(motion.times) == 7 and np.all(np.diff(motion.times) > 0)
    np.testing.assert_allclose(motion.poses[1][:3], [-0.125, 0.0, -0.002], atol=1e-12)
    np.testing.assert_allclose(motion.poses[2][0], 0.005, atol=1e-12)
    with pytest.raises(ValueError, match="privileged"):
        primitives.motion(np.full(primitives.dim(), 0.5), {"proprio": obs["proprio"]})
