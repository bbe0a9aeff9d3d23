"""Reset distributions: draw a physically settled start state of a TaskSpec's skill.

- scoop: the egg lies on the pan, the blade rests on the pan behind it (-x side);
- flip, toss and serve: the egg rests on the blade, which is held above the pan (a serve's may
  lie turned over, ``TaskSpec.egg_side_up``);
- catch: the egg is in flight above the pan (tossed up, spinning), the spatula waits below;
- season: the egg lies on the plate (either side up), the blade is drawn back towards the pan and
  the salt shaker stands in its rack, its grains settled in it.

Resting starts are settled by simulating a short while with the spatula holding its pose, so the
recorded initial state is an equilibrium rather than an interpenetration.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from robo_coevolve.env.physics import EggFlipPhysics
from robo_coevolve.task_spec import BLADE_START_SKILLS, PLATE_CENTRE, PLATE_START_SKILLS, TaskSpec

SETTLE_TIME = {"scoop": 0.2, "flip": 0.3, "catch": 0.0, "toss": 0.3, "serve": 0.3, "season": 0.3}  # s
EGG_THICKNESS = 0.0075  # m, of the white at egg_size 1: a turned-over egg's frame is this far up
_DROP_GAP = 0.0005  # m: how far above its support a resting egg is placed before settling


# ``TaskSpec.disturbance_phase`` -> the scorer's phase (``scoring.PHASES``) the push waits for.
PUSH_PHASES = {"pan": "on pan", "blade": "on blade", "air": "in air"}
# Where a push's random time falls, as shares of the horizon: anywhere in the middle for a push at
# that time; at the start for one that then waits for its phase, so that the phase is still to come.
_PUSH_WINDOW = {"any": (0.2, 0.8), "phase": (0.0, 0.1)}


@dataclass(frozen=True)
class Disturbance:
    """A horizontal push on the egg: ``force`` (fx, fy) N from ``start`` s for ``duration`` s.

    With a ``phase`` other than "any" the push is armed, not yet active: it waits from ``start``
    for the egg to be in that phase (``TaskSpec.disturbance_phase``), and the env replaces it
    with ``fired_at`` the time it fires."""

    start: float
    duration: float
    force: tuple[float, float]
    phase: str = "any"

    def active(self, t: float) -> bool:
        return self.phase == "any" and self.start <= t < self.start + self.duration

    def fired_at(self, t: float) -> Disturbance:
        """This push, fired at ``t`` s."""
        return Disturbance(t, self.duration, self.force)


def _uniform(rng: np.random.Generator, centre, half_width) -> np.ndarray:
    centre = np.asarray(centre, dtype=np.float64)
    return centre + rng.uniform(-1.0, 1.0, size=centre.shape) * np.asarray(half_width)


def _yaw_quat(yaw: float, turned: bool = False) -> np.ndarray:
    """The egg's orientation: yawed by ``yaw`` about z, and turned over about x if ``turned``."""
    q = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
    if not turned:
        return q
    out = np.empty(4)
    mujoco.mju_mulQuat(out, q, np.array([0.0, 1.0, 0.0, 0.0]))
    return out


def sample_initial_state(
    physics: EggFlipPhysics, task: TaskSpec, rng: np.random.Generator
) -> Disturbance | None:
    """Reset ``physics`` to a start state of ``task`` drawn with ``rng``; returns the episode's
    disturbance (None when ``task.disturbance_force`` is 0). Leaves time at 0."""
    m, d = physics.model, physics.data
    mujoco.mj_resetData(m, d)
    pose = np.clip(
        _uniform(rng, task.spatula_pose, task.spatula_pose_range), physics.ctrl_low, physics.ctrl_high
    )
    physics.set_spatula(pose)
    yaw = rng.uniform(-task.egg_yaw_range, task.egg_yaw_range)
    offset = _uniform(rng, task.egg_offset, [task.egg_offset_range] * 2)

    if task.skill in BLADE_START_SKILLS:
        mujoco.mj_forward(m, d)
        top = physics.blade_top() - (0.0, 0.0, m.body("pan").pos[2])
        # Along the blade's own axes, so a tilted blade still carries the egg at the offset.
        frame = d.site_xmat[m.site("blade_centre").id].reshape(3, 3)
        turned = task.egg_side_up == "white"
        lift = _DROP_GAP + (EGG_THICKNESS * task.egg_size if turned else 0.0)
        position = top + frame[:, 0] * offset[0] + frame[:, 1] * offset[1] + (0, 0, lift)
        physics.set_egg(position, _yaw_quat(yaw, turned))
    elif task.skill in PLATE_START_SKILLS:
        turned = task.egg_side_up == "white"
        lift = _DROP_GAP + (EGG_THICKNESS * task.egg_size if turned else 0.0)
        x, y = np.add(PLATE_CENTRE, offset)
        physics.set_egg([x, y, lift], _yaw_quat(yaw, turned))
    elif task.skill == "scoop":
        physics.set_egg([offset[0], offset[1], _DROP_GAP], _yaw_quat(yaw))
    else:  # catch
        velocity = _uniform(rng, task.egg_velocity, task.egg_velocity_range)
        spin = rng.uniform(-task.egg_spin_range, task.egg_spin_range, size=3)
        physics.set_egg([offset[0], offset[1], task.egg_height], _yaw_quat(yaw), velocity, spin)

    settle = SETTLE_TIME[task.skill]
    if settle > 0:
        mujoco.mj_step(m, d, nstep=int(round(settle / m.opt.timestep)))
    d.time = 0.0
    mujoco.mj_forward(m, d)

    if task.disturbance_force <= 0:
        return None
    phase = task.disturbance_phase
    angle = rng.uniform(0, 2 * np.pi)
    start = rng.uniform(*_PUSH_WINDOW["any" if phase == "any" else "phase"]) * task.horizon
    force = (task.disturbance_force * np.cos(angle), task.disturbance_force * np.sin(angle))
    return Disturbance(float(start), task.disturbance_duration, (float(force[0]), float(force[1])), phase)
