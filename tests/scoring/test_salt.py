"""The season's salt thresholds, measured on scripted shakes in the real scene (``Thresholds.salt_*``).

The scripted season (``motion.scripted.season``) docks at the shaker, carries it over the egg,
turns it over and shakes it. What comes out depends on the shaking, which is what the thresholds
separate: two small shakes over the egg are a pinch; eight empty most of the shaker; the same
pinch aimed beside the plate lands off the egg and off the plate.
"""

from __future__ import annotations

import numpy as np
import pytest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.scoring import Thresholds
from robo_coevolve.task_spec import GRAINS, TaskSpec
from robo_coevolve.trajectory import run_motion

SEEDS = range(6)


@pytest.fixture(scope="module")
def env():
    env = EggFlipEnv(task=TaskSpec.for_skill("season"))
    yield env
    env.close()


def _runs(env, **motion):
    out = []
    for seed in SEEDS:
        traj = run_motion(env, lambda obs: scripted.season(obs, **motion), seed=seed)
        ev = traj.events()
        out.append(
            (
                traj,
                {k: int(ev[k][-1]) for k in ("salt_dispensed", "salt_on_egg", "salt_spilled", "salt_cells")},
            )
        )
    return out


def test_a_pinch_over_the_egg_seasons_it(env):
    runs = _runs(env, shakes=2)
    th = Thresholds()
    assert sum(t.success for t, _ in runs) >= len(runs) - 1, [t.outcome["reason"] for t, _ in runs]
    for traj, salt in runs:
        if traj.success:
            assert th.salt_min <= salt["salt_dispensed"] <= th.salt_max
            assert salt["salt_on_egg"] >= th.salt_on_egg * salt["salt_dispensed"]
            assert traj.outcome["integrity"] == 1.0  # grains do not crack the egg


def test_shaking_the_shaker_empty_is_too_much_salt(env):
    runs = _runs(env, shakes=8)
    assert all(t.outcome["reason"].startswith("too much salt") for t, _ in runs), [s for _, s in runs]
    assert np.mean([s["salt_dispensed"] for _, s in runs]) > 0.75 * GRAINS


def test_turning_the_shaker_over_without_a_shake_gives_too_little(env):
    runs = _runs(env, shakes=0)
    little = [t.outcome["reason"].startswith("too little salt") for t, _ in runs]
    assert sum(little) >= len(runs) - 2, [s for _, s in runs]


def test_salt_shaken_beside_the_plate_spills(env):
    runs = _runs(env, shakes=2, aim=(0.0, -0.13))
    for traj, salt in runs:
        assert not traj.success
        assert salt["salt_on_egg"] == 0 and salt["salt_spilled"] >= 0.8 * salt["salt_dispensed"] > 0
