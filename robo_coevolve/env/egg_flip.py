"""EggFlipEnv: the gymnasium environment of the egg-flip kitchen.

Registered as ``robo_coevolve/EggFlip-v0`` (any skill, ``skill=`` picks it) and as one id per
skill, ``robo_coevolve/Scoop-v0``, ``Flip-v0``, ``Catch-v0``, ``Toss-v0`` (see
``robo_coevolve.register_envs``).

Actions are absolute spatula targets (x, y, z, pitch, roll), normalised to [-1, 1] over the
spatula's reach (``pose_to_action`` / ``action_to_pose`` convert from and to m and rad from the pan
surface centre), held for one control period while MuJoCo integrates ``substeps`` physics steps.
The observation is a ``Dict`` of arrays, as RL libraries take it:

- ``proprio`` (15,) float32: spatula pose, its velocity, and the previous command as a pose (SI);
- ``egg`` (13,) float32, privileged (``privileged=False`` drops it): egg position from the pan
  centre, quaternion, linear and angular velocity;
- ``image`` (H, W, 3) uint8, when ``image_size`` is set: the ``policy`` camera, fast settings;
- ``points`` (N, 3) float32, when ``point_cloud`` is set: depth points in the pan frame;
- ``instruction``: with ``instruction="index"`` (the default) the task's skill one-hot over
  ``SKILLS`` (float32); with ``instruction="text"`` the instruction text (a ``spaces.Text``, for
  the project's language-conditioned policies). ``info["instruction"]`` always holds the text.

The task's perturbations (``TaskSpec``) act here: ``servo_gain`` scales the servos' gains,
``action_latency`` delays the executed command by whole control steps (``proprio`` shows the
command sent, the latest action), a push fires at its time or, with a ``disturbance_phase``, at
the first control step from then on where the egg is in that phase; ``egg_obs_noise`` and
``egg_obs_dropout`` change only what the ``egg`` observation shows, never the sensor record the
scorer reads.

The episode terminates early when the egg falls off the pan (touches the floor or drops below the
pan, see ``Thresholds.fall_depth``) or the simulation diverges, and truncates at the task's
horizon. ``info["outcome"]`` holds the scorer's ``Outcome`` on the last step.

Rewards (``reward_type``, gymnasium-robotics' name):

- ``"sparse"`` (the default): 1 on the last step of a successful episode, else 0;
- ``"dense"``: the sparse reward plus potential-based shaping (Ng, Harada and Russell 1999),
  ``gamma * Phi(s') - Phi(s)``, with ``info["potential"]`` = Phi(s') and ``info["shaping"]``.
  Phi is the scorer's progress of the episode so far (``scoring.progress``, kept step by step
  by a ``ProgressTracker``): the progress a failure ending now would be graded with, in [0, 1].
  Its terms: scoop: the blade alone ever held the egg, how high it lifted it, and how much of
  the last ``hold_time`` the egg spent lifted on the blade, and resting there; flip: how far the
  egg ever turned over, and how much of the last ``hold_time`` it spent upside down, and
  resting; catch: the blade held the egg before it touched the pan, it has not touched the pan,
  and the end window as for scoop; toss: how far the egg turned over before it touched the pan,
  the blade alone held it upside down before then, and the end window as for scoop, upside
  down. A fallen egg cuts Phi to a fifth, a cracked one by its integrity, a diverged simulation
  to 0: the terms credit each step towards the success predicate as it happens instead of at
  the end. Phi is 0 at the start and after the last step (the absorbing state), so the shaping
  of an episode sums to 0 with ``gamma=1`` and an episode's discounted return is its sparse one:
  the optimal policy and what counts as success are the sparse reward's. ``gamma`` should be the
  learner's discount.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
from gymnasium import spaces

from robo_coevolve.env.initial_state import PUSH_PHASES, Disturbance, sample_initial_state
from robo_coevolve.env.physics import PEAK_SENSORS, EggFlipPhysics
from robo_coevolve.env.rendering import SceneRenderer
from robo_coevolve.scoring import PHASES, Outcome, Scorer, Thresholds
from robo_coevolve.scoring.events import fell, phase_index, row_events
from robo_coevolve.scoring.integrity import integrity_from_peak
from robo_coevolve.scoring.progress import ProgressTracker, progress
from robo_coevolve.task_spec import (
    EGG_RIM_RADIUS,
    INSTRUCTION_CHARSET,
    MAX_INSTRUCTION_LENGTH,
    SALT_SKILLS,
    SKILLS,
    TaskSpec,
)

# Observation bounds: spatula speeds (m/s, rad/s) and the egg state's position (m from the pan
# centre), quaternion, linear (m/s) and angular velocity (rad/s).
SPATULA_SPEED_LIMIT = np.array([10.0, 10.0, 10.0, 100.0, 100.0], np.float32)
EGG_STATE_LIMIT = np.array([2.0] * 3 + [1.0] * 4 + [20.0] * 3 + [200.0] * 3, np.float32)
PROPRIO_SIZE = 15  # spatula pose, velocity and command, 5 each
# ``TaskSpec.egg_obs_noise`` (m) -> the noise std of each egg state value: position; quaternion
# components (half the rotation angle of a rim displacement); velocities (that noise per 0.1 s).
_OBS_NOISE_SCALE = np.array(
    [1.0] * 3 + [0.5 / EGG_RIM_RADIUS] * 4 + [10.0] * 3 + [10.0 / EGG_RIM_RADIUS] * 3, np.float64
)
INSTRUCTION_MODES = ("index", "text")
REWARD_TYPES = ("sparse", "dense")


_BADQPOS, _BADQVEL, _BADQACC = (
    int(mujoco.mjtWarning.mjWARN_BADQPOS),
    int(mujoco.mjtWarning.mjWARN_BADQVEL),
    int(mujoco.mjtWarning.mjWARN_BADQACC),
)


def _as_slice(index: np.ndarray) -> slice | np.ndarray:
    """A run of consecutive indices as a slice (a view, cheaper than fancy indexing), else itself."""
    index = np.asarray(index)
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


class EggFlipEnv(gym.Env):
    """Scoop, flip, catch and toss a fried egg with a Cartesian spatula.

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
        instruction: "index" (the skill one-hot) or "text" (the instruction string).
        reward_type: "sparse" or "dense" (shaped; see the module docstring).
        gamma: the discount of the dense reward's shaping (the learner's), in (0, 1].
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
        instruction: str = "index",
        reward_type: str = "sparse",
        gamma: float = 0.99,
    ):
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r}: only None and 'rgb_array' exist")
        if instruction not in INSTRUCTION_MODES:
            raise ValueError(f"instruction={instruction!r}: choose one of {', '.join(INSTRUCTION_MODES)}")
        if reward_type not in REWARD_TYPES:
            raise ValueError(f"reward_type={reward_type!r}: choose one of {', '.join(REWARD_TYPES)}")
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma={gamma} must lie in (0, 1]: set it to the learner's discount")
        for name, value in (("image_size", image_size), ("point_cloud", point_cloud)):
            if value is not None and (not isinstance(value, int | np.integer) or value < 1):
                raise ValueError(f"{name}={value!r} must be a whole number >= 1, or None for none")
        if len(render_size) != 2 or min(render_size) < 1:
            raise ValueError(f"render_size={render_size!r} must be (width, height) in pixels, each >= 1")
        if not control_hz > 0:
            raise ValueError(f"control_hz={control_hz} must be > 0: choose one of 500/k Hz (e.g. 50)")
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
        self.instruction = instruction
        self.reward_type = reward_type
        self.gamma = float(gamma)
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
        self._ctrl_low = low.astype(np.float64)
        self._ctrl_span = high.astype(np.float64) - self._ctrl_low
        self._ctrl_low_list, self._ctrl_span_list = self._ctrl_low.tolist(), self._ctrl_span.tolist()
        self._proprio_bounds = (
            np.concatenate([low - 0.1, -SPATULA_SPEED_LIMIT, low]).astype(np.float32),
            np.concatenate([high + 0.1, SPATULA_SPEED_LIMIT, high]).astype(np.float32),
        )
        # The same bounds in float64: clipping a float64 observation against them is what np.clip
        # against the float32 ones does, without its per-call cost.
        self._proprio_clip = tuple(b.astype(np.float64) for b in self._proprio_bounds)
        self._egg_clip = (-EGG_STATE_LIMIT.astype(np.float64), EGG_STATE_LIMIT.astype(np.float64))
        self._state_clip = tuple(
            np.concatenate([proprio, egg]) if privileged else proprio
            for proprio, egg in zip(self._proprio_clip, self._egg_clip, strict=True)
        )
        obs: dict[str, spaces.Space] = {"proprio": spaces.Box(*self._proprio_bounds, dtype=np.float32)}
        if instruction == "text":
            obs["instruction"] = spaces.Text(MAX_INSTRUCTION_LENGTH, charset=INSTRUCTION_CHARSET)
        else:
            obs["instruction"] = spaces.Box(0.0, 1.0, (len(SKILLS),), np.float32)
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
        self._bind_physics()
        self._instruction_obs = self._instruction_of(self.task)
        self._progress: ProgressTracker | None = None
        self._potential = 0.0
        self._integrity = 1.0
        self._disturbance: Disturbance | None = None
        self._obs_rng = np.random.default_rng(self.task.seed)
        self._dropout = (math.inf, math.inf)  # s: when the observed egg state freezes
        self._shown_egg: np.ndarray | None = None
        self._perturb_obs = False
        self._pending: deque[list[float]] = deque()  # commands sent, not yet executed (latency)
        self._sent = np.zeros(len(self.physics.ctrl_low))
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
        if self.task.observation_perturbed:
            self._obs_rng = np.random.default_rng(self.np_random.integers(2**63))
        return self._begin(options)

    def reset_to_state(
        self, state: np.ndarray, disturbance: Disturbance | None = None, task: TaskSpec | dict | None = None
    ):
        """Start an episode from a saved ``initial_state`` instead of a draw (for exact replay).

        ``task`` (default: the current one) must be the task the state was saved under. Its
        observation noise, if any, is drawn from its seed.
        """
        if task is not None:
            self._set_task(self._as_task(task, self.task.skill))
        self.physics.set_state(state)
        self._disturbance = disturbance
        self._obs_rng = np.random.default_rng(self.task.seed)
        return self._begin({})

    def step(self, action):
        values = np.asarray(action, dtype=np.float64).reshape(self.action_space.shape).tolist()
        if not all(map(math.isfinite, values)):
            raise ValueError(f"action {action} is not finite")
        p = self.physics
        model, d, rows, disturbance = p.model, p.data, self._substep_rows, self._disturbance
        # action_to_pose of the clipped action, in plain Python on five numbers (the same float64
        # arithmetic without the cost of a numpy call per operation).
        ctrl, low, span = self._ctrl, self._ctrl_low_list, self._ctrl_span_list
        if self._pending:  # a latency: the command sent now runs ``action_latency`` steps later
            sent = [low[i] + (min(max(v, -1.0), 1.0) + 1.0) * 0.5 * span[i] for i, v in enumerate(values)]
            self._sent[:] = sent
            self._pending.append(sent)
            ctrl[:] = self._pending.popleft()
        else:
            for i, v in enumerate(values):
                ctrl[i] = low[i] + (min(max(v, -1.0), 1.0) + 1.0) * 0.5 * span[i]
        sensordata, step = self._sensordata, mujoco.mj_step
        for substep_row in self._substep_views:
            if disturbance is not None:
                p.set_push(disturbance.force if disturbance.active(d.time) else (0, 0))
            step(model, d)
            substep_row[...] = sensordata
        if self._tool_changer is not None:  # the season scene: latch the shaker when docked
            self._tool_changer.update(d)
        # Once per control step: MuJoCo's warning counters accumulate and a NaN stays NaN.
        if self._unstable():
            rows[:] = np.nan
            self._diverged = True
        # ``physics.reduce_substeps`` of one control step: peaks over the substeps, else the last.
        row = np.where(self._peak_mask, np.maximum.reduce(rows), rows[-1])
        self._rows.append(row)
        self._steps += 1

        force, on_blade, on_pan, on_burner, on_floor, on_plate, height = self._step_values(row.tolist())
        force = force if math.isfinite(force) else math.inf
        # Integrity only changes with a new peak above the crack force.
        if force > self._peak_force:
            self._peak_force = force
            if force > self.scorer.thresholds.crack_force:
                self._integrity = float(integrity_from_peak(force, self.scorer.thresholds))
        on_floor = bool(fell(on_floor, height, self.scorer.thresholds))
        terminated = self._diverged or on_floor
        truncated = not terminated and self._steps >= self.horizon_steps
        phase = phase_index(
            on_blade > 0, on_pan > 0, on_burner > 0, on_floor, not self._diverged, on_plate > 0
        )
        if disturbance is not None and disturbance.phase != "any":
            if d.time >= disturbance.start and PHASES[phase] == PUSH_PHASES[disturbance.phase]:
                self._disturbance = disturbance.fired_at(d.time)  # from the next physics step on
        info = {
            "phase": PHASES[phase],
            "integrity": self._integrity,
            "force": force,
            "diverged": self._diverged,
            "instruction": self.task.instruction,
        }
        reward = 0.0
        if terminated or truncated:
            outcome = self.outcome()
            info["outcome"] = outcome.to_dict()
            reward = float(outcome.success)
        if self.reward_type == "dense":
            reward += self._shaping(row, terminated or truncated, info)
        return self._observation(row), reward, terminated, truncated, info

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
        return self._ctrl_low + (np.asarray(action, dtype=np.float64) + 1.0) * 0.5 * self._ctrl_span

    def pose_to_action(self, pose: np.ndarray) -> np.ndarray:
        """Spatula target pose(s), m and rad -> normalised action(s) (float32, clipped to [-1, 1])."""
        low, high = self.physics.ctrl_low.astype(np.float64), self.physics.ctrl_high.astype(np.float64)
        action = 2.0 * (np.asarray(pose, dtype=np.float64) - low) / (high - low) - 1.0
        return np.clip(action, -1.0, 1.0).astype(np.float32)

    def proprio(self, pose: np.ndarray, velocity: np.ndarray, command: np.ndarray) -> np.ndarray:
        """The ``proprio`` observation(s) of spatula pose(s), velocity(ies) and the commanded
        pose(s), (..., 5) each in SI: (..., 15) float32, non-finite values zeroed, clipped into
        the observation space (used for live steps and for records made outside the env)."""
        proprio = np.concatenate([pose, velocity, command], axis=-1, dtype=np.float64)
        # One sum instead of an isfinite per value: a sum of finite values that overflows only runs
        # nan_to_num, which leaves finite values as they are.
        if not math.isfinite(proprio.sum()):
            proprio = np.nan_to_num(proprio)
        low, high = self._proprio_clip
        return np.minimum(np.maximum(proprio, low), high).astype(np.float32)

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
            self._bind_physics()
        else:
            self.physics.apply_task(task)
        self.task = task
        self._instruction_obs = self._instruction_of(task)

    def _bind_physics(self) -> None:
        """Per-model buffers and the columns and slices that ``step`` reads (looked up once)."""
        p = self.physics
        m = p.model
        self._substep_rows = np.zeros((self.substeps, m.nsensordata))
        self._substep_views = list(self._substep_rows)  # one view per substep, made once
        layout = p.sensor_slices
        self._sensor_columns = {name: s.start for name, s in layout.items()}
        # The sensors whose control-step value is their peak over the substeps (reduce_substeps).
        self._peak_mask = np.zeros(m.nsensordata, bool)
        for name in PEAK_SENSORS:
            self._peak_mask[layout[name]] = True
        self._step_values = operator.itemgetter(
            *p.sensor_columns(
                "egg_touch", "egg_on_blade", "egg_on_pan", "egg_on_burner", "egg_on_floor", "egg_on_plate"
            ),
            layout["egg_pos"].start + 2,  # the egg's height
        )
        egg = ("egg_pos", "egg_quat", "egg_linvel", "egg_angvel")  # the ``egg_state`` layout
        self._egg_columns = np.concatenate([np.arange(layout[n].start, layout[n].stop) for n in egg])
        self._spatula_qpos, self._spatula_qvel = _as_slice(p.spatula_qpos), _as_slice(p.spatula_qvel)
        self._tool_changer = p.tool_changer
        self._zero_nq, self._zero_nv = np.zeros(m.nq), np.zeros(m.nv)
        # Views of MjData's arrays, made once (each attribute access makes a new one).
        d = p.data
        self._qpos, self._qvel, self._ctrl, self._sensordata = d.qpos, d.qvel, d.ctrl, d.sensordata
        self._warnings = d.warning.number

    @staticmethod
    def _instruction_of(task: TaskSpec) -> np.ndarray:
        """The ``instruction="index"`` observation of ``task``: its skill one-hot over ``SKILLS``."""
        one_hot = np.zeros(len(SKILLS), np.float32)
        one_hot[SKILLS.index(task.skill)] = 1.0
        return one_hot

    def _shaping(self, row: np.ndarray, done: bool, info: dict[str, Any]) -> float:
        """``gamma * Phi(s') - Phi(s)`` of this step; Phi(s') is 0 once the episode is over."""
        if self._progress is not None:
            potential = self._progress.update(row_events(row, self._sensor_columns, self.scorer.thresholds))
        else:  # a season's progress reads every grain: that of the whole record so far
            scorer = self.scorer
            potential = progress(
                self.task.skill, scorer.events(self.record()), scorer.hold_steps, scorer.thresholds
            )
        potential = 0.0 if done else potential
        shaping = self.gamma * potential - self._potential
        self._potential = potential
        info["potential"], info["shaping"] = potential, shaping
        return shaping

    def _begin(self, options: dict[str, Any]):
        self._rows = []
        self._diverged = False
        self._steps = 0
        self._peak_force = 0.0
        self._integrity = 1.0
        self._potential = 0.0
        task = self.task
        latency = task.action_latency
        self._pending = deque([self._ctrl.tolist()] * latency) if latency else deque()
        self._sent[:] = self._ctrl
        self._shown_egg = None
        self._perturb_obs = self.privileged and task.observation_perturbed
        if task.egg_obs_dropout > 0:
            start = self._obs_rng.uniform(0.0, max(task.horizon - task.egg_obs_dropout, 0.0))
            self._dropout = (start, start + task.egg_obs_dropout)
        else:
            self._dropout = (math.inf, math.inf)
        self._progress = None
        if self.reward_type == "dense" and self.task.skill not in SALT_SKILLS:
            self._progress = ProgressTracker(self.task.skill, self.scorer.hold_steps, self.scorer.thresholds)
        self.initial_state = self.physics.get_state()
        info = {"task": self.task.to_dict(), "phase": None, "instruction": self.task.instruction}
        if self.reward_type == "dense":
            info["potential"] = 0.0
        return self._observation(), info

    def _observed_egg(self, egg: np.ndarray) -> np.ndarray:
        """The egg state the observation shows: ``egg`` (the true one) with the task's noise, or
        the last one shown while the dropout lasts."""
        t = self._steps * self.control_dt
        start, end = self._dropout
        if self._shown_egg is not None and start <= t < end:
            return self._shown_egg.copy()
        noisy = egg.astype(np.float64)
        if self.task.egg_obs_noise > 0:
            noisy += self._obs_rng.standard_normal(noisy.shape) * (self.task.egg_obs_noise * _OBS_NOISE_SCALE)
            quat = noisy[3:7]
            quat /= max(float(np.linalg.norm(quat)), 1e-9)
        low, high = self._egg_clip
        self._shown_egg = np.minimum(np.maximum(noisy, low), high).astype(np.float32)
        return self._shown_egg.copy()

    def _unstable(self) -> bool:
        """``physics.diverged()`` with fewer numpy calls: an instability warning, or a non-finite
        qpos or qvel (a dot product with zeros is NaN exactly when a value is not finite)."""
        warnings = self._warnings
        bad = warnings[_BADQPOS] or warnings[_BADQVEL] or warnings[_BADQACC]
        return bool(bad) or not math.isfinite(self._qpos.dot(self._zero_nq) + self._qvel.dot(self._zero_nv))

    def _observation(self, row: np.ndarray | None = None) -> dict[str, Any]:
        """The observation of the current state; ``row``: this step's sensor row (where the egg
        state is read; from the live sensors when None or after a divergence)."""
        p = self.physics
        pose, velocity = self._qpos[self._spatula_qpos], self._qvel[self._spatula_qvel]
        command = self._sent if self._pending else self._ctrl
        if row is not None and not self._diverged:
            # A live step, where every value is finite (step checked): ``proprio`` and ``egg`` are
            # clipped into their bounds and cast in one pass.
            parts = (pose, velocity, command, *((row[self._egg_columns],) if self.privileged else ()))
            low, high = self._state_clip
            state = np.minimum(np.maximum(np.concatenate(parts), low), high).astype(np.float32)
            obs: dict[str, Any] = {"proprio": state[:PROPRIO_SIZE]}
            if self.privileged:
                obs["egg"] = state[PROPRIO_SIZE:]
        else:
            obs = {"proprio": self.proprio(pose, velocity, command)}
            if self.privileged:
                low, high = self._egg_clip
                egg = np.nan_to_num(p.egg_state()) if self._diverged else p.egg_state()
                obs["egg"] = np.minimum(np.maximum(egg, low), high).astype(np.float32)
        if self._perturb_obs:
            obs["egg"] = self._observed_egg(obs["egg"])
        text = self.instruction == "text"
        obs["instruction"] = self.task.instruction if text else self._instruction_obs.copy()
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
