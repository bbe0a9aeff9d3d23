"""EggFlipEnv: the gymnasium environment of the egg-flip kitchen (``robo_coevolve/EggFlip-v0``).

Actions are absolute spatula targets (x, y, z, pitch, roll), normalised to [-1, 1] over the
spatula's reach (``pose_to_action`` / ``action_to_pose`` convert from and to m and rad from the pan
surface centre), held for one control period while MuJoCo integrates ``substeps`` physics steps.
The observation is a ``Dict``:

- ``proprio`` (15,) float32: spatula pose, its velocity, and the previous command as a pose (SI);
- ``egg`` (13,) float32, privileged (``privileged=False`` drops it): egg position from the pan
  centre, quaternion, linear and angular velocity;
- ``image`` (H, W, 3) uint8, when ``image_size`` is set: the ``policy`` camera, fast settings;
- ``points`` (N, 3) float32, when ``point_cloud`` is set: depth points in the pan frame;
- ``instruction``: the task's instruction text.

The reward is the scorer's verdict, paid once at the end of the episode (1 for success). The
episode terminates early when the egg falls off the pan (touches the floor or drops below the
pan, see ``Thresholds.fall_depth``) or the simulation diverges, and truncates
at the task's horizon. ``info["outcome"]`` holds the scorer's ``Outcome`` on the last step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from robo_coevolve.env.initial_state import Disturbance, sample_initial_state
from robo_coevolve.env.physics import EggFlipPhysics
from robo_coevolve.env.rendering import SceneRenderer
from robo_coevolve.scoring import PHASES, Outcome, Scorer, Thresholds
from robo_coevolve.scoring.events import fell, phase_index
from robo_coevolve.scoring.integrity import integrity_from_peak
from robo_coevolve.task_spec import INSTRUCTION_CHARSET, MAX_INSTRUCTION_LENGTH, TaskSpec

# Observation bounds: spatula speeds (m/s, rad/s) and the egg state's position (m from the pan
# centre), quaternion, linear (m/s) and angular velocity (rad/s).
SPATULA_SPEED_LIMIT = np.array([10.0, 10.0, 10.0, 100.0, 100.0], np.float32)
EGG_STATE_LIMIT = np.array([2.0] * 3 + [1.0] * 4 + [20.0] * 3 + [200.0] * 3, np.float32)


class EggFlipEnv(gym.Env):
    """Scoop, flip and catch a fried egg with a Cartesian spatula.

    Args:
        task: the TaskSpec (or its dict); ``reset(options={"task": ...})`` switches task.
        skill: shorthand for ``TaskSpec.for_skill(skill)`` when ``task`` is None.
        control_hz: control rate; the physics step is the scene's (2 ms).
        privileged: include the egg's true state in the observation.
        image_size: side of the square policy image, or None for no image.
        point_cloud: number of points, or None for no point cloud.
        render_mode: None or "rgb_array" (``render()`` returns a pretty overview frame).
        render_size: (width, height) of ``render()`` frames.
        thresholds: scoring thresholds.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        task: TaskSpec | dict | None = None,
        skill: str = "scoop",
        control_hz: float = 50.0,
        privileged: bool = True,
        image_size: int | None = None,
        point_cloud: int | None = None,
        render_mode: str | None = None,
        render_size: tuple[int, int] = (480, 360),
        render_camera: str = "overview",
        thresholds: Thresholds | dict | None = None,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: only None and 'rgb_array' exist")
        self.task = self._as_task(task, skill)
        self.physics = EggFlipPhysics(self.task)
        timestep = self.physics.model.opt.timestep
        self.substeps = int(round(1.0 / (control_hz * timestep)))
        if self.substeps < 1 or abs(self.substeps * timestep * control_hz - 1) > 1e-6:
            raise ValueError(
                f"control_hz={control_hz} is not a whole number of {timestep * 1e3:g} ms physics "
                f"steps: choose one of 500/k Hz (e.g. 50, 25, 20)"
            )
        self.control_dt = self.substeps * timestep
        self.metadata = {**self.metadata, "render_fps": int(round(1 / self.control_dt))}
        if isinstance(thresholds, Mapping):
            thresholds = Thresholds(**thresholds)
        self.scorer = Scorer(self.control_dt, thresholds)
        self.privileged = privileged
        self.image_size = image_size
        self.point_cloud = point_cloud
        self.render_mode = render_mode
        self.render_size = tuple(render_size)
        self.render_camera = render_camera
        self._policy_camera: SceneRenderer | None = None
        self._video_camera: SceneRenderer | None = None
        self._depth_points = None

        self.action_space = spaces.Box(-1.0, 1.0, (len(self.physics.ctrl_low),), np.float32)
        # Finite physical bounds; observations are clipped into them (they only bind when the
        # simulation blows up).
        low, high = self.physics.ctrl_low, self.physics.ctrl_high
        self._proprio_bounds = (
            np.concatenate([low - 0.1, -SPATULA_SPEED_LIMIT, low]).astype(np.float32),
            np.concatenate([high + 0.1, SPATULA_SPEED_LIMIT, high]).astype(np.float32),
        )
        obs: dict[str, spaces.Space] = {
            "proprio": spaces.Box(*self._proprio_bounds, dtype=np.float32),
            "instruction": spaces.Text(MAX_INSTRUCTION_LENGTH, charset=INSTRUCTION_CHARSET),
        }
        if privileged:
            obs["egg"] = spaces.Box(-EGG_STATE_LIMIT, EGG_STATE_LIMIT, dtype=np.float32)
        if image_size:
            obs["image"] = spaces.Box(0, 255, (image_size, image_size, 3), np.uint8)
        if point_cloud:
            from robo_coevolve.env.point_cloud import WORKSPACE_HIGH, WORKSPACE_LOW

            obs["points"] = spaces.Box(
                np.tile(np.float32(WORKSPACE_LOW), (point_cloud, 1)),
                np.tile(np.float32(WORKSPACE_HIGH), (point_cloud, 1)),
                dtype=np.float32,
            )
        self.observation_space = spaces.Dict(obs)

        self._rows: list[np.ndarray] = []
        self._substep_rows = np.zeros((self.substeps, self.physics.model.nsensordata))
        self._step_columns = self.physics.sensor_columns(
            "egg_touch", "egg_on_blade", "egg_on_pan", "egg_on_burner", "egg_on_floor"
        )
        self._height_column = self.physics.sensor_slices["egg_pos"].start + 2
        self._disturbance: Disturbance | None = None
        self._diverged = False
        self._steps = 0
        self._peak_force = 0.0
        self.initial_state: np.ndarray | None = None

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = options or {}
        if "task" in options:
            self._set_task(self._as_task(options["task"], self.task.skill))
        if seed is None and self._np_random is None:
            seed = self.task.seed
        super().reset(seed=seed)
        self._disturbance = sample_initial_state(self.physics, self.task, self.np_random)
        return self._begin(options)

    def reset_to_state(
        self, state: np.ndarray, disturbance: Disturbance | None = None, task: TaskSpec | dict | None = None
    ):
        """Start an episode from a saved ``initial_state`` instead of a draw (for exact replay).

        ``task`` (default: the current one) must be the task the state was saved under.
        """
        if task is not None:
            self._set_task(self._as_task(task, self.task.skill))
        self.physics.set_state(state)
        self._disturbance = disturbance
        return self._begin({})

    def step(self, action):
        action = np.asarray(action, dtype=np.float64).reshape(self.action_space.shape)
        if not np.isfinite(action).all():
            raise ValueError(f"action {action} is not finite")
        p, d = self.physics, self.physics.data
        d.ctrl[:] = self.action_to_pose(np.clip(action, -1.0, 1.0))
        for k in range(self.substeps):
            if self._disturbance is not None:
                p.set_push(self._disturbance.force if self._disturbance.active(d.time) else (0, 0))
            mujoco.mj_step(p.model, d)
            self._substep_rows[k] = d.sensordata
        # Once per control step: MuJoCo's warning counters accumulate and a NaN stays NaN.
        if p.diverged():
            self._substep_rows[:] = np.nan
            self._diverged = True
        row = p.reduce_substeps(self._substep_rows, self.substeps)[0]
        self._rows.append(row)
        self._steps += 1

        force, on_blade, on_pan, on_burner, on_floor = row[self._step_columns]
        force = float(force) if np.isfinite(force) else np.inf
        self._peak_force = max(self._peak_force, force)
        on_floor = fell(on_floor, row[self._height_column], self.scorer.thresholds)
        terminated = self._diverged or bool(on_floor)
        truncated = not terminated and self._steps >= self.horizon_steps
        phase = phase_index(on_blade > 0, on_pan > 0, on_burner > 0, on_floor, not self._diverged)
        info = {
            "phase": PHASES[int(phase)],
            "integrity": float(integrity_from_peak(self._peak_force, self.scorer.thresholds)),
            "force": force,
            "diverged": self._diverged,
        }
        reward = 0.0
        if terminated or truncated:
            outcome = self.outcome()
            info["outcome"] = outcome.to_dict()
            reward = float(outcome.success)
        return self._observation(), reward, terminated, truncated, info

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        return self.render_frame()

    def close(self):
        for renderer in (self._policy_camera, self._video_camera, self._depth_points):
            if renderer is not None:
                renderer.close()
        self._policy_camera = self._video_camera = self._depth_points = None

    # ------------------------------------------------------------------ extras
    def action_to_pose(self, action: np.ndarray) -> np.ndarray:
        """Normalised action(s) in [-1, 1] -> spatula target pose(s), m and rad (float64)."""
        low, high = self.physics.ctrl_low.astype(np.float64), self.physics.ctrl_high.astype(np.float64)
        return low + (np.asarray(action, dtype=np.float64) + 1.0) * 0.5 * (high - low)

    def pose_to_action(self, pose: np.ndarray) -> np.ndarray:
        """Spatula target pose(s), m and rad -> normalised action(s) (float32, clipped to [-1, 1])."""
        low, high = self.physics.ctrl_low.astype(np.float64), self.physics.ctrl_high.astype(np.float64)
        action = 2.0 * (np.asarray(pose, dtype=np.float64) - low) / (high - low) - 1.0
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def proprio(self, pose: np.ndarray, velocity: np.ndarray, command: np.ndarray) -> np.ndarray:
        """The ``proprio`` observation(s) of spatula pose(s), velocity(ies) and the commanded
        pose(s), (..., 5) each in SI: (..., 15) float32, non-finite values zeroed, clipped into
        the observation space (used for live steps and for records made outside the env)."""
        proprio = np.concatenate([pose, velocity, command], axis=-1)
        if not np.isfinite(proprio).all():
            proprio = np.nan_to_num(proprio)
        return np.clip(proprio, *self._proprio_bounds).astype(np.float32)

    @property
    def horizon_steps(self) -> int:
        return int(round(self.task.horizon / self.control_dt))

    @property
    def disturbance(self) -> Disturbance | None:
        return self._disturbance

    def sensor_rows(self) -> np.ndarray:
        """(T, nsensordata) float64 control-rate sensor rows of the episode so far."""
        if not self._rows:
            return np.zeros((0, self.physics.model.nsensordata))
        return np.asarray(self._rows, dtype=np.float64)

    def record(self) -> dict[str, np.ndarray]:
        """The episode's control-rate sensor record so far, by sensor name (see the scorer)."""
        return self.physics.record(self.sensor_rows())

    def outcome(self) -> Outcome:
        """The scorer's verdict on the episode so far."""
        if not self._rows:
            raise RuntimeError("no step taken yet: call step() before asking for an outcome")
        return self.scorer.outcome(self.task.skill, self.record(), diverged=self._diverged)

    def render_frame(self, camera: str | None = None) -> np.ndarray:
        """A pretty (shadows, reflections) frame of ``camera`` (default: ``render_camera``)."""
        camera = camera or self.render_camera
        if self._video_camera is None or self._video_camera.camera != camera:
            if self._video_camera is not None:
                self._video_camera.close()
            w, h = self.render_size
            self._video_camera = SceneRenderer(self.physics.model, w, h, camera, pretty=True)
        return self._video_camera.rgb(self.physics.data)

    # ------------------------------------------------------------------ internals
    @staticmethod
    def _as_task(task: TaskSpec | dict | None, skill: str) -> TaskSpec:
        if task is None:
            return TaskSpec.for_skill(skill)
        if isinstance(task, TaskSpec):
            return task
        if isinstance(task, Mapping):
            return TaskSpec.from_dict(dict(task))
        raise TypeError(f"task must be a TaskSpec or a dict of its fields, got {type(task).__name__}")

    def _set_task(self, task: TaskSpec) -> None:
        if not self.physics.matches(task):
            self.close()  # renderers hold the old model
            self.physics = EggFlipPhysics(task)
            self._substep_rows = np.zeros((self.substeps, self.physics.model.nsensordata))
        else:
            self.physics.apply_task(task)
        self.task = task

    def _begin(self, options: dict[str, Any]):
        self._rows = []
        self._diverged = False
        self._steps = 0
        self._peak_force = 0.0
        self.initial_state = self.physics.get_state()
        info = {"task": self.task.to_dict(), "phase": None}
        return self._observation(), info

    def _finite(self, x: np.ndarray) -> np.ndarray:
        return np.nan_to_num(x) if self._diverged else x

    def _observation(self) -> dict[str, Any]:
        p = self.physics
        obs: dict[str, Any] = {
            "proprio": self.proprio(p.spatula_pose(), p.spatula_velocity(), p.data.ctrl),
            "instruction": self.task.instruction,
        }
        if self.privileged:
            egg = np.clip(self._finite(p.egg_state()), -EGG_STATE_LIMIT, EGG_STATE_LIMIT)
            obs["egg"] = egg.astype(np.float32)
        if self.image_size:
            if self._policy_camera is None:
                self._policy_camera = SceneRenderer(p.model, self.image_size, self.image_size, "policy")
            obs["image"] = self._policy_camera.rgb(p.data)
        if self.point_cloud:
            if self._depth_points is None:
                from robo_coevolve.env.point_cloud import DepthPointCloud

                self._depth_points = DepthPointCloud(p.model, num_points=self.point_cloud)
            obs["points"] = self._depth_points(p.data)
        return obs
