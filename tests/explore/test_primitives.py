"""The base primitive family expresses scoop, flip (either way) and catch; the throw family, toss."""

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
# In the throw family (a toss: the scripted toss's keyframes, caught under the egg's start).
TOSS = dict(
    wait_time=0.1,
    throw_time=0.07,
    throw_rise=0.09,
    throw_dx=0.0,
    throw_dy=0.0,
    throw_pitch=-0.15,
    toss_roll=0.55,
    fall_time=0.125,
    catch_dx=0.0,
    catch_dy=0.0,
    catch_dz=0.0,
    catch_wait=0.09,
    give=0.025,
    give_time=0.19,
)


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


@pytest.mark.parametrize("roll", [0.55, -0.55])
def test_named_throw_parameters_toss_and_the_skill_picks_the_family(sim, roll):
    """A toss plan is read in the throw family (its task's skill's); on a flip task the same
    parameters are the wrong size for the base family."""
    assert primitives.family("toss") is primitives.THROW
    assert all(primitives.family(s) is primitives.BASE for s in ("scoop", "flip", "catch"))
    params = primitives.THROW.unit(dict(TOSS, toss_roll=roll))
    tasks = TaskDistribution.for_skill("toss").sample_many(np.random.default_rng(11), 4)
    results = [sim.run(Trial(t, PrimitivePlan(params))) for t in tasks]
    assert [r.outcome["reason"] for r in results] == ["success"] * 4
    flip = TaskDistribution.for_skill("flip").sample(np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"base primitive parameters need shape \(15,\)"):
        sim.run(Trial(flip, PrimitivePlan(params)))


def test_throw_keyframes_throw_from_the_blade_and_catch_under_the_egg():
    obs = {"proprio": np.zeros(15, np.float32), "egg": np.zeros(13, np.float32)}
    obs["proprio"][:3] = (0.01, -0.01, 0.08)
    obs["egg"][:3] = (0.02, 0.005, 0.083)
    values = dict(TOSS, throw_dx=0.01, catch_dx=-0.02, catch_dy=0.03, catch_dz=0.02)
    motion = primitives.THROW.motion(primitives.THROW.unit(values), obs)
    assert np.all(np.diff(motion.times) > 0)
    np.testing.assert_allclose(motion.poses[2], [0.02, -0.01, 0.17, -0.15, 0.55], atol=1e-9)
    np.testing.assert_allclose(motion.poses[3], [0.0, 0.035, 0.1, 0.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(motion.poses[-1], [0.0, 0.035, 0.075, 0.0, 0.0], atol=1e-9)
    assert motion.times[2] - motion.times[1] == pytest.approx(0.07)


def test_the_average_of_the_two_flips_fails(sim):
    """Why the search keeps modes apart: halfway between rolling left and right is no roll."""
    left = primitives.unit(dict(SOLUTIONS["flip"], toss_roll=-2.1))
    right = primitives.unit(dict(SOLUTIONS["flip"], toss_roll=2.1))
    task = TaskDistribution.for_skill("flip").sample(np.random.default_rng(0))
    assert not sim.run(Trial(task, PrimitivePlan((left + right) / 2))).success


@pytest.mark.parametrize("family", primitives.FAMILIES.values(), ids=primitives.FAMILIES)
def test_unit_and_physical_are_inverse_and_clip_to_the_ranges(family):
    u = np.random.default_rng(0).uniform(size=family.dim())
    np.testing.assert_allclose(family.unit(family.physical(u)), u)
    q = family.physical(np.full(family.dim(), 2.0))
    assert [q[p.name] for p in family.parameters] == pytest.approx([p.high for p in family.parameters])
    with pytest.raises(ValueError, match="shape"):
        family.physical(np.zeros(3))
    with pytest.raises(ValueError, match="unknown primitive parameter"):
        family.unit({"wobble": 1.0})
    assert family.sample(np.random.default_rng(0), 4).shape == (4, family.dim())


def test_the_module_functions_are_the_base_family():
    u = np.random.default_rng(1).uniform(size=primitives.dim())
    assert primitives.dim() == primitives.BASE.dim() and primitives.NAMES == primitives.BASE.names
    assert primitives.physical(u) == primitives.BASE.physical(u)


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
