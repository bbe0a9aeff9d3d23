"""The season scene: the salt shaker, its grains, the tool change, and exact replay with them."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.physics import EggFlipPhysics
from robo_coevolve.explore.open_loop import OpenLoopSimulator, actions_trial
from robo_coevolve.motion import scripted
from robo_coevolve.motion.keyframes import KeyframeMotion
from robo_coevolve.scoring.progress import progress
from robo_coevolve.task_spec import DOCK_POSE, GRAINS, RACK_SEAT, TaskSpec
from robo_coevolve.trajectory import replay, run_motion

SEASON = TaskSpec.for_skill("season", seed=3)


@pytest.fixture(scope="module")
def env():
    env = EggFlipEnv(task=SEASON)
    yield env
    env.close()


@pytest.fixture(scope="module")
def seasoned(env):
    return run_motion(env, scripted.season, seed=SEASON.seed)


def test_only_a_season_pays_for_the_grains():
    plain = EggFlipPhysics(TaskSpec.for_skill("serve")).model
    salted = EggFlipPhysics(SEASON).model
    assert salted.nbody == plain.nbody + 1 + GRAINS
    with pytest.raises(KeyError):
        plain.body("shaker")
    assert not EggFlipPhysics(TaskSpec.for_skill("serve")).matches(SEASON)


def test_grains_touch_only_the_shaker_inside_and_where_they_land():
    m = EggFlipPhysics(SEASON).model
    grains = [m.body(f"grain{i}").geomadr[0] for i in range(GRAINS)]

    def collide(a: int, b: int) -> bool:
        return bool(m.geom_contype[a] & m.geom_conaffinity[b] or m.geom_contype[b] & m.geom_conaffinity[a])

    partners = {m.geom(g).name for g in range(m.ngeom) if g not in grains and collide(grains[0], g)}
    shaker = {m.geom(g).name for g in range(m.ngeom) if m.geom_bodyid[g] == m.body("shaker").id}
    landing = {"egg_white", "yolk", "plate_bottom", "pan_bottom", "floor"}
    assert partners - shaker - landing == {n for n in partners if n.startswith("plate_rim")}
    assert landing <= partners and shaker <= partners
    assert not collide(grains[0], grains[1])  # no grain-grain contacts: nothing to jam, less to solve
    # The shaker touches nothing but its grains: it cannot knock the egg off the plate.
    assert not any(collide(s, m.geom("egg_white").id) for s in range(m.ngeom) if m.geom(s).name in shaker)


def test_the_shaker_latches_when_the_blade_docks_under_it(seasoned):
    ev = seasoned.events()
    held = ev["shaker_held"]
    latched = int(np.argmax(held))
    assert 0 < latched and held[latched:].all()  # held from the dock on, for good
    assert (ev["salt_dispensed"][:latched] == 0).all()
    assert seasoned.success, seasoned.outcome["reason"]


def test_a_blade_two_centimetres_off_the_dock_never_latches(env):
    missed = list(DOCK_POSE)
    missed[0] += 0.02

    def motion(obs):
        start = obs["proprio"][:5]
        return KeyframeMotion(
            [0.0, 0.6, 0.9, 1.5, 2.0], [start, missed, missed, [0.25, 0, 0.2, 0, 0], [0.25, 0, 0.2, 0, 3.1]]
        )

    traj = run_motion(env, motion, seed=0)
    ev = traj.events()
    assert not ev["shaker_held"].any() and ev["salt_dispensed"][-1] == 0
    assert traj.outcome["reason"].startswith("too little salt")


def test_a_season_replays_bit_for_bit_from_its_start_and_from_any_state(env, seasoned):
    assert np.array_equal(replay(seasoned, env).sensors, seasoned.sensors)
    # From a state saved after the latch: the tool change is part of the saved state.
    k = int(np.argmax(seasoned.events()["shaker_held"])) + 10
    env.reset_to_state(seasoned.initial_state, task=SEASON)
    for action in seasoned.actions[:k]:
        env.step(action)
    state = env.physics.get_state()
    fresh = EggFlipEnv(task=SEASON)
    try:
        fresh.reset_to_state(state, task=SEASON)
        assert fresh.physics.data.eq_active[fresh.physics.tool_changer.grip] == 1
        for action in seasoned.actions[k:]:
            fresh.step(action)
        assert np.array_equal(fresh.sensor_rows(), seasoned.sensors[k:])
    finally:
        fresh.close()


def test_the_open_loop_simulator_steps_a_season_through_the_env(seasoned):
    sim = OpenLoopSimulator()
    try:
        traj = sim.run(actions_trial(SEASON, seasoned.actions))
    finally:
        sim.close()
    assert np.array_equal(traj.sensors, seasoned.sensors) and traj.success


def test_a_seasons_dense_reward_is_progress_of_every_prefix(seasoned):
    env = EggFlipEnv(task=SEASON, reward_type="dense", gamma=1.0)
    try:
        env.reset(seed=SEASON.seed)
        potentials, total = [], 0.0
        for action in seasoned.actions:
            _, reward, terminated, truncated, info = env.step(action)
            potentials.append(info["potential"])
            total += reward
        ev = seasoned.events()
        th, hold = env.scorer.thresholds, env.scorer.hold_steps
        for t in (0, 40, 90, len(potentials) - 2):
            assert potentials[t] == progress("season", {k: v[: t + 1] for k, v in ev.items()}, hold, th)
        assert max(potentials) > 0.8 and total == pytest.approx(1.0)  # telescopes to the success
    finally:
        env.close()


def test_the_season_scene_keeps_the_egg_where_it_was_laid():
    env = EggFlipEnv(task=SEASON)
    try:
        env.reset(seed=1)
        start = env.physics.egg_position().copy()
        for _ in range(25):  # the spatula holds its pose for half a second
            env.step(env.pose_to_action(env.physics.spatula_pose()))
        assert np.allclose(env.physics.egg_position(), start, atol=1e-4)
        assert np.hypot(*(start[:2] - (0.25, 0.0))) < 0.02
        m, d = env.physics.model, env.physics.data
        seat = np.array(RACK_SEAT) + (0, 0, m.body("pan").pos[2])
        assert np.linalg.norm(d.site_xpos[m.site("shaker_base").id] - seat) < 1e-3
        assert mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_INTEGRATION) == env.physics.state_size
    finally:
        env.close()
