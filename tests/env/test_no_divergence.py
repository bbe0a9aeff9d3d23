"""Property: across every TaskSpec field's valid range and any action sequence, the egg-flip
simulation stays finite and never diverges (the env's "diverged" verdict is a safety net only)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from robo_coevolve import SKILLS, TaskSpec
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.physics import EggFlipPhysics
from robo_coevolve.task_spec import (
    BLADE_START_SKILLS,
    EGG_RIM_RADIUS,
    PAN_RADIUS,
    PLATE_RADIUS,
    PLATE_START_SKILLS,
    SPATULA_HIGH,
    SPATULA_LOW,
)

CONTROL_STEPS = 60  # per example: 1.2 s at 50 Hz, long enough for a flung egg to land again


def _between(low: float, high: float) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


@st.composite
def task_specs(draw) -> TaskSpec:
    """A valid TaskSpec of any skill, its physical fields drawn across their validated ranges."""
    skill = draw(st.sampled_from(SKILLS))
    size = draw(_between(0.6, 1.4))
    fields = dict(
        egg_mass=draw(_between(0.01, 0.2)),
        egg_size=size,
        egg_pan_friction=draw(_between(0.05, 3.0)),
        egg_blade_friction=draw(_between(0.05, 3.0)),
        pan_height=draw(_between(0.2, 0.8)),
        egg_yaw_range=draw(_between(0.0, math.pi)),
        disturbance_force=draw(_between(0.0, 5.0)),
        disturbance_duration=draw(_between(0.0, 1.0)),
        seed=draw(st.integers(0, 2**31 - 1)),
    )
    if skill in BLADE_START_SKILLS:
        # Anywhere in the spatula's reach: the egg starts on the blade whatever its pose.
        reach = zip(SPATULA_LOW, SPATULA_HIGH, strict=True)
        fields["spatula_pose"] = tuple(draw(_between(lo, hi)) for lo, hi in reach)
        fields["spatula_pose_range"] = (0.0,) * 5
    else:
        # Anywhere on the pan, or on the plate for a season (it starts there).
        surface = PLATE_RADIUS if skill in PLATE_START_SKILLS else PAN_RADIUS
        spread = draw(_between(0.0, 0.005 if skill in PLATE_START_SKILLS else 0.02))
        reach = surface - EGG_RIM_RADIUS * size - math.sqrt(2) * spread
        radius, angle = draw(_between(0.0, reach)), draw(_between(0.0, 2 * math.pi))
        fields["egg_offset"] = (radius * math.cos(angle), radius * math.sin(angle))
        fields["egg_offset_range"] = spread
    if skill == "catch":
        fields |= dict(
            egg_height=draw(_between(0.0, 0.4)),
            egg_velocity=tuple(draw(_between(-3.0, 3.0)) for _ in range(3)),
            egg_velocity_range=tuple(draw(_between(0.0, 3.0)) for _ in range(3)),
            egg_spin_range=draw(_between(0.0, 30.0)),
        )
    return TaskSpec.for_skill(skill, **fields)


# Actions beyond [-1, 1] are clipped by the env; the edges (bang-bang targets) are the most violent.
action_sequences = arrays(np.float32, (CONTROL_STEPS, 5), elements=_between(-1.5, 1.5).map(np.float32))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(task=task_specs(), actions=action_sequences)
def test_random_tasks_and_actions_never_diverge(task, actions):
    env = EggFlipEnv(task=task)
    try:
        obs, _ = env.reset()
        for action in actions:
            obs, _, terminated, truncated, info = env.step(action)
            assert not info["diverged"], f"diverged at t={env.physics.data.time:.3f} s on {task.to_json()}"
            assert np.isfinite(obs["proprio"]).all() and np.isfinite(obs["egg"]).all()
            assert env.observation_space.contains(obs)
            if terminated or truncated:
                break
    finally:
        env.close()


@pytest.mark.parametrize("mass", [0.01, 0.02, 0.03, 0.075, 0.1, 0.2])
def test_a_tumbling_egg_of_any_mass_keeps_its_energy_in_flight(mass):
    """A task's egg mass is written into the compiled model: what MuJoCo derives from the masses
    must follow, or the integration of a tumbling egg gains energy until it diverges."""
    physics = EggFlipPhysics(TaskSpec.for_skill("catch"))
    physics.apply_task(TaskSpec.for_skill("catch", egg_mass=mass))  # as a task switch does
    m, d = physics.model, physics.data
    physics.set_egg([0.0, 0.0, 1.5], [1.0, 0.0, 0.0, 0.0], angvel=[30.0, 0.0, 0.0])

    def energy() -> float:
        mujoco.mj_forward(m, d)
        mujoco.mj_energyPos(m, d)
        mujoco.mj_energyVel(m, d)
        return float(d.energy.sum())

    start = energy()
    highest = start
    for _ in range(250):  # 0.5 s of free fall, well above the pan
        mujoco.mj_step(m, d)
        highest = max(highest, energy())
    assert highest <= start * 1.01
