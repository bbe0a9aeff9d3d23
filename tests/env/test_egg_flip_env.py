"""EggFlipEnv: gymnasium API conformance, observations, reset distributions, task switches."""

from __future__ import annotations

import warnings

import gymnasium
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import robo_coevolve
from robo_coevolve import SKILLS, TaskSpec
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.point_cloud import WORKSPACE_HIGH, WORKSPACE_LOW

CONTACT_SENSORS = ("egg_on_blade", "egg_on_pan", "egg_on_floor", "egg_on_burner", "egg_on_plate")


@pytest.fixture
def make_env():
    """Build EggFlipEnvs that are closed (renderers freed) at the end of the test."""
    envs = []

    def make(**kwargs) -> EggFlipEnv:
        env = EggFlipEnv(**kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


# ----------------------------------------------------------------------------- gymnasium API
CHECK_ENV_CASES = [
    *[(skill, {}) for skill in SKILLS],
    *[(skill, {"image_size": 32, "point_cloud": 64}) for skill in SKILLS],
    ("flip", {"render_mode": "rgb_array"}),
    ("scoop", {"privileged": False}),
    ("flip", {"instruction": "text"}),
    ("catch", {"reward_type": "dense"}),
]


@pytest.mark.parametrize(
    "skill, kwargs", CHECK_ENV_CASES, ids=[f"{s}-{'-'.join(k) or 'state'}" for s, k in CHECK_ENV_CASES]
)
def test_check_env(skill, kwargs):
    # Built through gymnasium.make so the env has a spec and check_env also exercises the declared
    # render modes ("rgb_array" only; "human" is not declared and must never be opened).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gymnasium.make(robo_coevolve.ENV_ID, skill=skill, **kwargs)
        try:
            assert env.unwrapped.spec is not None
            assert "human" not in env.unwrapped.metadata["render_modes"]
            check_env(env.unwrapped)
        finally:
            env.close()


def test_gymnasium_make_after_import():
    assert robo_coevolve.ENV_ID == "robo_coevolve/EggFlip-v0"
    assert robo_coevolve.ENV_ID in gymnasium.registry
    robo_coevolve.register_envs()  # idempotent
    env = gymnasium.make("robo_coevolve/EggFlip-v0", skill="flip")
    try:
        assert isinstance(env.unwrapped, EggFlipEnv)
        assert env.unwrapped.task.skill == "flip"
        obs, info = env.reset(seed=0)
        assert obs in env.observation_space
        assert info["task"]["skill"] == "flip"
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert obs in env.observation_space
        assert isinstance(reward, float)
        assert not terminated and not truncated
    finally:
        env.close()


def test_human_render_mode_is_refused():
    with pytest.raises(ValueError, match="render_mode"):
        EggFlipEnv(render_mode="human")


def test_rgb_array_render(make_env):
    env = make_env(skill="scoop", render_mode="rgb_array", render_size=(64, 48))
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (48, 64, 3) and frame.dtype == np.uint8
    assert frame.std() > 0
    assert make_env(skill="scoop").render() is None


# ----------------------------------------------------------------------------- observations
OBS_CASES = [
    ({}, {"proprio": (15,), "egg": (13,)}),
    ({"privileged": False}, {"proprio": (15,)}),
    ({"image_size": 32}, {"proprio": (15,), "egg": (13,), "image": (32, 32, 3)}),
    ({"point_cloud": 64}, {"proprio": (15,), "egg": (13,), "points": (64, 3)}),
    (
        {"image_size": 24, "point_cloud": 32, "privileged": False},
        {"proprio": (15,), "image": (24, 24, 3), "points": (32, 3)},
    ),
]


@pytest.mark.parametrize(
    "kwargs, shapes", OBS_CASES, ids=lambda c: "-".join(c) if isinstance(c, dict) else ""
)
def test_observation_shapes(make_env, kwargs, shapes):
    env = make_env(skill="scoop", **kwargs)
    assert set(env.observation_space.spaces) == {*shapes, "instruction"}
    obs, _ = env.reset(seed=0)
    step_obs = env.step(env.pose_to_action(env.physics.spatula_pose()))[0]
    for o in (obs, step_obs):
        assert set(o) == {*shapes, "instruction"}
        for key, shape in shapes.items():
            assert o[key].shape == shape, key
            assert o[key].dtype == (np.uint8 if key == "image" else np.float32), key
            assert env.observation_space[key].shape == shape
        np.testing.assert_array_equal(o["instruction"], np.eye(len(SKILLS))[SKILLS.index("scoop")])
        assert o in env.observation_space
    if not env.privileged:
        assert "egg" not in obs


def test_text_instruction_option(make_env):
    task = TaskSpec.for_skill("flip", instruction="turn it over")
    env = make_env(task=task, instruction="text")
    obs, info = env.reset(seed=0)
    step_obs, _, _, _, step_info = env.step(env.pose_to_action(env.physics.spatula_pose()))
    for o, i in ((obs, info), (step_obs, step_info)):
        assert o["instruction"] == i["instruction"] == "turn it over"
        assert o in env.observation_space


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"instruction": "words"}, "instruction='words'"),
        ({"reward_type": "shaped"}, "reward_type='shaped'"),
        ({"gamma": 0.0}, "gamma=0.0"),
        ({"image_size": -1}, "image_size=-1 must be a whole number >= 1"),
        ({"image_size": 2.5}, "image_size=2.5"),
        ({"point_cloud": 0}, "point_cloud=0"),
        ({"render_size": (0, 10)}, r"render_size=\(0, 10\)"),
        ({"control_hz": -5}, "control_hz=-5 must be > 0"),
    ],
)
def test_bad_options_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EggFlipEnv(**kwargs)
    with pytest.raises(ValueError, match=match):  # as RL users make it
        gymnasium.make("robo_coevolve/Scoop-v0", **kwargs)


def test_proprio_layout(make_env):
    env = make_env(skill="flip")
    obs, _ = env.reset(seed=3)
    p = env.physics
    np.testing.assert_allclose(obs["proprio"][:5], p.spatula_pose(), atol=1e-6)
    np.testing.assert_allclose(obs["proprio"][5:10], p.spatula_velocity(), atol=1e-6)
    np.testing.assert_allclose(obs["proprio"][10:], p.data.ctrl, atol=1e-6)
    np.testing.assert_allclose(obs["egg"], p.egg_state(), atol=1e-6)


# ----------------------------------------------------------------------------- reset distributions
SEEDS = (0, 1, 2)


def _egg_geoms(model) -> set[int]:
    return {g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body("egg").id}


@pytest.mark.parametrize("seed", SEEDS)
def test_scoop_reset_egg_on_pan(make_env, seed):
    env = make_env(skill="scoop")
    obs, _ = env.reset(seed=seed)
    p = env.physics
    assert abs(p.egg_height()) < 0.002
    assert abs(obs["egg"][2]) < 0.002
    assert p.sensor("egg_on_pan")[0] > 0
    assert p.sensor("egg_on_floor")[0] == 0
    assert p.egg_up()[2] > 0.99  # right side up
    assert np.hypot(*p.egg_position()[:2]) < 0.05  # near the pan centre (offset range 0.02)
    assert np.linalg.norm(obs["egg"][7:10]) < 0.05  # settled


@pytest.mark.parametrize("seed", SEEDS)
def test_flip_reset_egg_on_blade(make_env, seed):
    env = make_env(skill="flip")
    obs, _ = env.reset(seed=seed)
    p = env.physics
    assert p.sensor("egg_on_blade")[0] > 0
    assert p.sensor("egg_on_pan")[0] == 0
    assert p.egg_height() > 0.05
    assert p.egg_up()[2] > 0.99
    # the egg sits over the blade
    blade = p.sensor("blade_pos")
    assert np.linalg.norm(p.egg_position()[:2] - blade[:2]) < 0.03
    assert np.linalg.norm(obs["egg"][7:10]) < 0.05


@pytest.mark.parametrize("seed", SEEDS)
def test_catch_reset_egg_in_flight(make_env, seed):
    env = make_env(skill="catch")
    obs, _ = env.reset(seed=seed)
    p = env.physics
    for name in CONTACT_SENSORS:
        assert p.sensor(name)[0] == 0, name
    egg = _egg_geoms(p.model)
    touching = [(c.geom1, c.geom2) for c in p.data.contact[: p.data.ncon] if c.geom1 in egg or c.geom2 in egg]
    assert touching == []
    assert p.egg_height() >= 0.10
    assert obs["egg"][2] >= 0.10
    assert obs["egg"][9] > 0  # tossed upwards (vz = 0.5 +- 0.1 m/s)


@pytest.mark.parametrize("skill", SKILLS)
def test_reset_is_seeded(make_env, skill):
    a, b = make_env(skill=skill), make_env(skill=skill)
    obs_a, _ = a.reset(seed=123)
    obs_b, _ = b.reset(seed=123)
    np.testing.assert_array_equal(a.initial_state, b.initial_state)
    np.testing.assert_array_equal(obs_a["egg"], obs_b["egg"])
    np.testing.assert_array_equal(obs_a["proprio"], obs_b["proprio"])

    b.reset(seed=124)
    assert not np.array_equal(a.initial_state, b.initial_state)
    # the next draw of one seeded sequence differs from its first
    first = a.initial_state.copy()
    a.reset()
    assert not np.array_equal(first, a.initial_state)


def test_first_reset_without_seed_uses_task_seed(make_env):
    a = make_env(task=TaskSpec.for_skill("scoop", seed=5))
    b = make_env(task=TaskSpec.for_skill("scoop", seed=5))
    c = make_env(task=TaskSpec.for_skill("scoop", seed=6))
    for env in (a, b, c):
        env.reset()
    np.testing.assert_array_equal(a.initial_state, b.initial_state)
    assert not np.array_equal(a.initial_state, c.initial_state)


def test_reset_to_state_restores(make_env):
    env = make_env(skill="flip")
    obs, _ = env.reset(seed=4)
    state = env.initial_state.copy()
    env.step(env.action_space.high)
    again, _ = env.reset_to_state(state)
    np.testing.assert_array_equal(env.initial_state, state)
    np.testing.assert_array_equal(again["egg"], obs["egg"])


# ----------------------------------------------------------------------------- point cloud
def _in_workspace(points: np.ndarray) -> np.ndarray:
    low = np.asarray(WORKSPACE_LOW, np.float32) - 1e-6
    high = np.asarray(WORKSPACE_HIGH, np.float32) + 1e-6
    return ((points >= low) & (points <= high)).all(axis=1)


@pytest.mark.parametrize("skill", SKILLS)
def test_point_cloud_basic(make_env, skill):
    env = make_env(skill=skill, point_cloud=256)
    obs, _ = env.reset(seed=0)
    points = obs["points"]
    assert points.shape == (256, 3) and points.dtype == np.float32
    assert np.isfinite(points).all()
    assert _in_workspace(points).all()
    assert len(np.unique(points, axis=0)) > 128  # a real view, not one repeated point
    if skill == "scoop":
        near = np.linalg.norm(points - obs["egg"][:3], axis=1) < 0.02
        assert near.any()


def _raised_points_near(points: np.ndarray, egg: np.ndarray, xy: np.ndarray) -> int:
    """Points 3-20 mm above the egg's bottom within 3.5 cm (horizontally) of ``xy``."""
    dz = points[:, 2] - egg[2]
    dxy = np.linalg.norm(points[:, :2] - xy, axis=1)
    return int(((dz > 0.003) & (dz < 0.02) & (dxy < 0.035)).sum())


def test_point_cloud_sees_egg_where_it_is(make_env):
    """The depth->pan-frame projection puts the egg's top where the egg is, not mirrored."""
    task = TaskSpec.for_skill("scoop", egg_offset=(0.05, 0.05), egg_offset_range=0.0)
    env = make_env(task=task, point_cloud=256)
    obs, _ = env.reset(seed=0)
    points, egg = obs["points"], obs["egg"][:3]
    np.testing.assert_allclose(egg[:2], (0.05, 0.05), atol=0.005)
    assert _raised_points_near(points, egg, egg[:2]) >= 5
    for mirrored in (egg[:2] * (1, -1), egg[:2] * (-1, 1), -egg[:2]):
        assert _raised_points_near(points, egg, mirrored) == 0, mirrored


def test_point_cloud_sees_egg_in_flight(make_env):
    env = make_env(skill="catch", point_cloud=256)
    obs, _ = env.reset(seed=0)
    points, egg = obs["points"], obs["egg"][:3]
    near = np.linalg.norm(points - egg, axis=1) < 0.02
    assert near.any()
    assert (points[near, 2] > 0.1).all()


def test_point_cloud_matches_ray_casts(make_env):
    """Every depth pixel projected by DepthPointCloud lies on the surface mj_ray hits."""
    env = make_env(skill="scoop", point_cloud=64)
    env.reset(seed=0)
    pc, m, d = env._depth_points, env.physics.model, env.physics.data
    depth = pc._renderer.depth(d).reshape(-1)
    rot = d.cam_xmat[pc._camera_id].reshape(3, 3)
    origin = d.cam_xpos[pc._camera_id]
    geom = np.zeros(1, np.int32)
    rng = np.random.default_rng(0)
    for k in rng.choice(len(depth), size=64, replace=False):
        ray = rot @ pc._rays[k]
        # The camera does not see the hidden collision group (the pan rim's boxes): neither may the ray.
        visible = np.array([1, 1, 1, 0, 1, 1], dtype=np.uint8)
        dist = mujoco.mj_ray(m, d, origin, ray / np.linalg.norm(ray), visible, 1, -1, geom)
        if dist < 0:
            continue  # nothing hit
        expected = origin + ray / np.linalg.norm(ray) * dist
        np.testing.assert_allclose(origin + ray * depth[k], expected, atol=2e-3)


# ----------------------------------------------------------------------------- image
def test_image_varies_and_follows_spatula(make_env):
    env = make_env(skill="scoop", image_size=32)
    obs, _ = env.reset(seed=0)
    before = obs["image"].astype(np.int16)
    assert before.std() > 0
    target = env.physics.spatula_pose().copy()
    target[:3] = (0.0, 0.05, 0.2)  # lift the spatula up into view (m)
    for _ in range(15):
        obs = env.step(env.pose_to_action(target))[0]
    assert env.physics.spatula_pose()[2] > 0.1
    after = obs["image"].astype(np.int16)
    assert np.abs(after - before).mean() > 1.0


# ----------------------------------------------------------------------------- task switches
def test_task_option_changes_geometry_and_mass(make_env):
    env = make_env(skill="scoop", image_size=32, point_cloud=64)
    env.reset(seed=0)
    old_physics = env.physics
    task = TaskSpec.for_skill("scoop", egg_mass=0.06, pan_height=0.5, egg_size=1.2)
    obs, info = env.reset(seed=0, options={"task": task})
    p = env.physics
    assert env.task == task
    assert info["task"] == task.to_dict()
    assert p is not old_physics  # geometry changed: model rebuilt
    assert p.model.body_mass[p.model.body("egg").id] == pytest.approx(0.06)
    assert p.model.body("pan").pos[2] == pytest.approx(0.5)
    np.testing.assert_allclose(p.model.geom("yolk").size, np.array([0.014, 0.014, 0.006]) * 1.2)
    # the egg still starts resting on the (raised) pan
    assert abs(p.egg_height()) < 0.002
    assert abs(obs["egg"][2]) < 0.002
    assert p.sensor("egg_on_pan")[0] > 0
    assert abs(p.data.xpos[p.model.body("egg").id][2] - 0.5) < 0.002
    # renderers were rebuilt for the new model
    assert obs in env.observation_space
    assert obs["image"].std() > 0


def test_task_option_as_dict_and_mass_only(make_env):
    env = make_env(skill="scoop")
    env.reset(seed=0)
    physics = env.physics
    inertia = physics.model.body_inertia[physics.egg_body].copy()
    task = TaskSpec.for_skill("scoop", egg_mass=0.1, egg_pan_friction=0.5)
    env.reset(seed=0, options={"task": task.to_dict()})
    assert env.physics is physics  # same geometry: no rebuild
    assert env.task == task
    assert physics.model.body_mass[physics.egg_body] == pytest.approx(0.1)
    np.testing.assert_allclose(physics.model.body_inertia[physics.egg_body], inertia * 2.0)
    pair = physics.model.pair("egg_pan").id
    np.testing.assert_allclose(physics.model.pair_friction[pair, :2], 0.5)


def test_task_option_switches_skill(make_env):
    env = make_env(skill="scoop")
    env.reset(seed=0)
    obs, info = env.reset(seed=0, options={"task": TaskSpec.for_skill("catch")})
    assert env.task.skill == "catch"
    assert obs["instruction"].argmax() == SKILLS.index("catch")
    assert info["instruction"] == TaskSpec.for_skill("catch").instruction
    assert env.physics.egg_height() >= 0.10


# ----------------------------------------------------------------------------- actions
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_action_raises(make_env, bad):
    env = make_env(skill="flip")
    env.reset(seed=0)
    action = env.action_space.sample()
    action[2] = bad
    with pytest.raises(ValueError, match="finite"):
        env.step(action)


def test_action_is_clipped(make_env):
    env = make_env(skill="flip")
    env.reset(seed=0)
    ctrlrange = env.physics.model.actuator_ctrlrange
    obs = env.step(env.action_space.high + 1.0)[0]
    np.testing.assert_allclose(env.physics.data.ctrl, ctrlrange[:, 1], atol=1e-6)
    np.testing.assert_allclose(obs["proprio"][10:], ctrlrange[:, 1], atol=1e-6)
    env.step(env.action_space.low - 1.0)
    np.testing.assert_allclose(env.physics.data.ctrl, ctrlrange[:, 0], atol=1e-6)


def test_action_is_normalised_pose(make_env):
    env = make_env(skill="scoop")
    env.reset(seed=0)
    ctrlrange = env.physics.model.actuator_ctrlrange
    np.testing.assert_array_equal(env.action_space.low, -1.0)
    np.testing.assert_array_equal(env.action_space.high, 1.0)
    np.testing.assert_allclose(env.action_to_pose(-np.ones(5)), ctrlrange[:, 0], atol=1e-6)
    np.testing.assert_allclose(env.action_to_pose(np.ones(5)), ctrlrange[:, 1], atol=1e-6)
    pose = np.array([0.05, -0.1, 0.2, 0.3, -1.0])
    np.testing.assert_allclose(env.action_to_pose(env.pose_to_action(pose)), pose, atol=1e-6)
    env.step(env.pose_to_action(pose))
    np.testing.assert_allclose(env.physics.data.ctrl, pose, atol=1e-6)


def test_wrong_action_shape_raises(make_env):
    env = make_env(skill="scoop")
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(np.zeros(4, np.float32))


def test_episode_truncates_at_horizon(make_env):
    env = make_env(task=TaskSpec.for_skill("flip", horizon=0.1))
    env.reset(seed=0)
    hold = env.pose_to_action(env.physics.spatula_pose())
    results = [env.step(hold) for _ in range(env.horizon_steps)]
    assert env.horizon_steps == 5
    assert not any(r[3] for r in results[:-1])
    _, reward, terminated, truncated, info = results[-1]
    assert truncated and not terminated
    assert "outcome" in info and reward in (0.0, 1.0)


def test_instruction_outside_text_space_is_rejected():
    with pytest.raises(ValueError, match="instruction"):
        EggFlipEnv(task=TaskSpec.for_skill("flip", instruction="flip: now"))


@pytest.mark.parametrize("pan_height", [0.4, 0.45, 0.5])
def test_the_plate_is_where_the_scorer_looks_for_it(pan_height):
    """task_spec's PLATE_CENTRE and PLATE_RADIUS are the scene's, at every pan height: its flat
    is level with the pan surface, within the spatula's reach."""
    from robo_coevolve.env.physics import build_model
    from robo_coevolve.task_spec import PLATE_CENTRE, PLATE_RADIUS, SPATULA_HIGH

    m = build_model(pan_height, 1.0)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    plate, pan = d.xpos[m.body("plate").id], d.xpos[m.body("pan").id]
    assert np.allclose(plate[:2] - pan[:2], PLATE_CENTRE) and plate[2] == pytest.approx(pan[2])
    bottom = m.geom("plate_bottom")
    assert bottom.size[0] == pytest.approx(PLATE_RADIUS)
    assert d.geom_xpos[bottom.id][2] + bottom.size[1] == pytest.approx(pan[2])  # its top is the pan's level
    assert PLATE_CENTRE[0] + PLATE_RADIUS / 2 < SPATULA_HIGH[0] + 0.05  # the blade reaches past its centre
    stand = m.geom("plate_stand")
    assert d.geom_xpos[stand.id][2] - stand.size[1] == pytest.approx(0.0, abs=1e-9)  # it stands on the floor
