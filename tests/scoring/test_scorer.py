"""The scorer's pure functions on constructed sensor records."""

import numpy as np
import pytest

from robo_coevolve.scoring import Scorer, Thresholds
from robo_coevolve.scoring.integrity import integrity_from_peak, integrity_over_time
from robo_coevolve.task_spec import GRAINS, PLATE_CENTRE, RACK_SEAT, SALT_SKILLS, SKILLS


def record(steps=20, height=0.06, up=1.0, on_blade=1, on_pan=0, on_floor=0, speed=0.0, force=0.5, on_plate=0):
    """A constant record of ``steps`` rows in the scene's sensor layout."""
    col = lambda v, dim=1: np.full((steps, dim), v, dtype=np.float64)  # noqa: E731
    egg_pos = col(0.0, 3)
    egg_pos[:, 2] = height
    egg_up = col(0.0, 3)
    egg_up[:, 2] = up
    linvel = col(0.0, 3)
    linvel[:, 0] = speed
    return {
        "egg_touch": col(force),
        "egg_pos": egg_pos,
        "egg_quat": col(0.0, 4),
        "egg_up": egg_up,
        "egg_linvel": linvel,
        "egg_angvel": col(0.0, 3),
        "blade_pos": col(0.0, 3),
        "blade_up": col(0.0, 3),
        "blade_linvel": col(0.0, 3),
        "egg_on_blade": col(on_blade),
        "egg_on_pan": col(on_pan),
        "egg_on_floor": col(on_floor),
        "egg_on_burner": col(0),
        "egg_on_plate": col(on_plate),
    }


def salted(rec: dict) -> dict:
    """``rec`` with a season scene's salt sensors: the shaker in its rack, every grain in it."""
    steps = len(rec["egg_pos"])
    hole = np.array([RACK_SEAT[0], RACK_SEAT[1], RACK_SEAT[2] + 0.066])
    inside = hole - (0, 0, 0.03) - rec["egg_pos"][0]  # in the egg's frame (the record's is the world's)
    grains = {f"grain{i}": np.tile(inside, (steps, 1)) for i in range(GRAINS)}
    return {
        **rec,
        "shaker_pos": np.tile(hole, (steps, 1)),
        "shaker_quat": np.tile([1.0, 0, 0, 0], (steps, 1)),
        "shaker_grip": np.tile([0.1, 0, 0], (steps, 1)),
        **grains,
    }


scorer = Scorer(control_dt=0.02)


def test_integrity_is_one_below_crack_and_zero_at_break():
    t = Thresholds()
    assert integrity_from_peak(t.crack_force - 1, t) == 1.0
    assert integrity_from_peak(t.break_force, t) == 0.0
    assert integrity_from_peak((t.crack_force + t.break_force) / 2, t) == pytest.approx(0.5)


def test_integrity_never_recovers():
    t = Thresholds()
    series = integrity_over_time(np.array([1.0, 50.0, 1.0, np.nan]), t)
    assert series[1] == series[2] < 1.0
    assert series[3] == 0.0  # a non-finite force is the worst case


def test_scoop_predicate():
    assert scorer.outcome("scoop", record()).success
    assert scorer.outcome("scoop", record(height=0.01)).reason.startswith("egg not lifted")
    assert scorer.outcome("scoop", record(on_pan=1)).reason == "egg not held by the blade alone at the end"
    assert scorer.outcome("scoop", record(speed=0.5)).reason == "egg still moving on the blade at the end"
    assert scorer.outcome("scoop", record(force=59.0)).reason.startswith("egg cracked")


def test_flip_predicate():
    assert scorer.outcome("flip", record(up=-1.0, height=0.0, on_blade=0, on_pan=1)).success
    assert not scorer.outcome("flip", record(up=-0.3)).success


def test_catch_requires_never_touching_the_pan():
    rec = record()
    assert scorer.outcome("catch", rec).success
    rec["egg_on_pan"][3] = 1
    assert scorer.outcome("catch", rec).reason == "egg touched the pan before it was caught"


def test_toss_predicate():
    """Thrown (in the air at some step), never on the pan, upside down and held at rest at the end."""
    tossed = record(up=-1.0)
    tossed["egg_on_blade"][4:9] = 0  # in the air
    assert scorer.outcome("toss", tossed).success
    assert scorer.outcome("toss", record(up=-1.0)).reason == "egg never left the blade"
    on_pan = {k: v.copy() for k, v in tossed.items()}
    on_pan["egg_on_pan"][12] = 1
    assert scorer.outcome("toss", on_pan).reason == "egg touched the pan"
    upright = {k: v.copy() for k, v in tossed.items()}
    upright["egg_up"][:, 2] = 1.0
    assert scorer.outcome("toss", upright).reason == "egg not upside down at the end"
    low = {k: v.copy() for k, v in tossed.items()}
    low["egg_pos"][:, 2] = 0.01
    assert scorer.outcome("toss", low).reason.startswith("egg not held")
    sliding = {k: v.copy() for k, v in tossed.items()}
    sliding["egg_linvel"][-1, 0] = 0.5
    assert scorer.outcome("toss", sliding).reason == "egg still moving on the blade at the end"


def served(up=1.0, start_up=None, **kw):
    """An egg lying on the plate's centre from step 5 on, carried there on the blade before."""
    rec = record(height=0.0, on_blade=0, on_plate=1, up=up, **kw)
    rec["egg_pos"][:, 0] = PLATE_CENTRE[0]
    rec["egg_on_plate"][:5], rec["egg_on_blade"][:5] = 0, 1
    if start_up is not None:
        rec["egg_up"][0, 2] = start_up
    return rec


def test_serve_predicate():
    """On the plate alone, at rest, the side up it started with; a turned-over egg is served
    turned over (its instruction says yolk down)."""
    assert scorer.outcome("serve", served()).success
    assert scorer.outcome("serve", served(up=-1.0, start_up=-1.0)).success
    assert (
        scorer.outcome("serve", served(up=-1.0, start_up=1.0)).reason
        == "egg not the side up it was served as"
    )
    assert (
        scorer.outcome("serve", served(up=1.0, start_up=-1.0)).reason
        == "egg not the side up it was served as"
    )
    pinned = served()
    pinned["egg_on_blade"][:] = 1
    assert scorer.outcome("serve", pinned).reason == "egg not lying on the plate alone at the end"
    assert scorer.outcome("serve", served(speed=0.3)).reason == "egg still moving on the plate at the end"
    assert scorer.outcome("serve", served(force=59.0)).reason.startswith("egg cracked")
    on_pan = served()
    on_pan["egg_on_plate"][:] = 0
    on_pan["egg_on_pan"][5:] = 1
    assert not scorer.outcome("serve", on_pan).success


def test_a_flip_onto_the_plate_is_no_flip():
    onto_plate = served(up=-1.0)
    assert scorer.outcome("flip", onto_plate).reason == "egg turned over onto the plate, not in the pan"
    assert not scorer.outcome("flip", onto_plate).success


def test_success_must_hold_over_the_hold_window():
    rec = record()
    rec["egg_linvel"][-3, 0] = 0.5  # still sliding 60 ms before the end (hold window 200 ms)
    assert not scorer.outcome("scoop", rec).success
    rec = record()
    rec["egg_linvel"][-12, 0] = 0.5  # outside the window: fine
    assert scorer.outcome("scoop", rec).success


def test_floor_and_divergence_fail_every_skill():
    for skill in SKILLS:
        scene = salted if skill in SALT_SKILLS else dict
        rec = scene(record(up=-1.0))
        rec["egg_on_floor"][0] = 1
        assert scorer.outcome(skill, rec).reason == "egg fell to the floor"
        assert scorer.outcome(skill, scene(record(up=-1.0)), diverged=True).reason == "simulation diverged"
        rec = scene(record(up=-1.0))
        rec["egg_pos"][5] = np.nan
        assert scorer.outcome(skill, rec).diverged


def test_a_full_shaker_in_its_rack_is_no_seasoning():
    outcome = scorer.outcome("season", salted(record(height=0.0, on_blade=0, on_plate=1)))
    assert not outcome.success and outcome.reason == "too little salt: 0 grains < 10"
    assert 0 < outcome.progress < 0.25  # the blade never reached the shaker, the egg lies still


def test_unknown_skill_and_bad_thresholds_raise():
    with pytest.raises(ValueError, match="no success predicate for skill 'juggle'"):
        scorer.outcome("juggle", record())
    with pytest.raises(ValueError, match="crack_force < break_force"):
        Thresholds(crack_force=70.0)
