"""The graded progress score ranks failures by how close they came, from the scorer's events."""

import numpy as np
from test_scorer import record, served

from robo_coevolve.scoring import Scorer

scorer = Scorer(control_dt=0.02)


def progress(skill, rec):
    return scorer.outcome(skill, rec).progress


def test_scoop_progress_orders_near_misses():
    lifted_but_sliding = record(height=0.06, on_blade=1, speed=0.2)
    on_blade_low = record(height=0.01, on_blade=1)
    untouched = record(height=0.0, on_blade=0, on_pan=1)
    scores = [progress("scoop", r) for r in (lifted_but_sliding, on_blade_low, untouched)]
    assert scores[0] > scores[1] > scores[2] >= 0.0
    assert progress("scoop", record()) == 1.0  # a success


def test_flip_progress_rewards_turning_the_egg():
    half_turned = record(height=0.0, on_blade=0, on_pan=1, up=0.0)
    upright = record(height=0.0, on_blade=0, on_pan=1, up=1.0)
    assert progress("flip", half_turned) > progress("flip", upright)


def test_cracked_or_fallen_eggs_lose_most_of_their_progress():
    good = record(height=0.06, on_blade=1, speed=0.2)
    cracked = record(height=0.06, on_blade=1, speed=0.2, force=80.0)
    fallen = record(height=0.06, on_blade=1, speed=0.2)
    fallen["egg_on_floor"][-1] = 1
    assert progress("scoop", cracked) < 0.5 * progress("scoop", good)
    assert progress("scoop", fallen) < 0.5 * progress("scoop", good)
    nan = record()
    nan["egg_pos"][3] = np.nan
    assert progress("scoop", nan) == 0.0


def test_catch_progress_counts_the_pan_touch():
    never_touched_pan = record(height=0.06, on_blade=1, speed=0.2)
    hit_pan = record(height=0.06, on_blade=1, speed=0.2)
    hit_pan["egg_on_pan"][2] = 1
    assert progress("catch", never_touched_pan) > progress("catch", hit_pan)


def test_toss_progress_credits_catches_by_how_far_the_egg_had_turned():
    """A success scores 1; then caught upside down but sliding; caught half turned; caught right
    side up; last an egg turned over onto the pan, which is a flip, not a toss: no credit."""

    def tossed(up):
        rec = record(up=up)
        rec["egg_on_blade"][2:6] = 0  # thrown: in the air for a while, caught from step 6
        return rec

    caught_sliding = tossed(up=-1.0)
    caught_sliding["egg_linvel"][:, 0] = 0.2
    half_turned = tossed(up=1.0)
    half_turned["egg_up"][6, 2] = 0.0  # landed on its edge, then fell back right side up
    onto_pan = tossed(up=-1.0)
    onto_pan["egg_pos"][:, 2] = 0.0
    onto_pan["egg_on_pan"][6:] = 1
    onto_pan["egg_on_blade"][6:] = 0
    cases = (tossed(up=-1.0), caught_sliding, half_turned, tossed(up=1.0), onto_pan)
    scores = [progress("toss", r) for r in cases]
    assert scores[0] == 1.0
    assert scores[0] > scores[1] > scores[2] > scores[3] > scores[4] == 0.0


def test_serve_progress_credits_the_carry_then_the_plate_then_the_side():
    """A success scores 1; then on the plate the wrong side up; carried on the blade over the plate;
    carried half way; held where it started."""

    def carried(x):
        rec = record()
        rec["egg_pos"][:, 0] = np.linspace(0.0, x, len(rec["egg_pos"]))
        return rec

    cases = (served(), served(up=-1.0, start_up=1.0), carried(0.25), carried(0.12), carried(0.0))
    scores = [progress("serve", r) for r in cases]
    assert scores[0] == 1.0
    assert scores[0] > scores[1] > scores[2] > scores[3] > scores[4] == 0.0
