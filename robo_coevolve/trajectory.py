"""Trajectory: the record of one trial, and its exact replay.

A trial is fully determined by its TaskSpec, the env's control rate, the initial sim state, the
disturbance drawn at reset, and the actions: ``replay`` rebuilds the env from those and steps the
same actions, which reproduces every sensor reading bit for bit (MuJoCo is deterministic on one
machine and build). The sensor record and outcome are kept too, so a trajectory can be scored,
filtered and rendered without re-simulating it.

Saved as one ``.npz`` (arrays) with a JSON header (TaskSpec, outcome, disturbance, versions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from robo_coevolve.atomic import file_aside
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.initial_state import Disturbance
from robo_coevolve.env.physics import sensor_layout
from robo_coevolve.scoring import Thresholds
from robo_coevolve.scoring.events import step_events
from robo_coevolve.task_spec import TaskSpec

FORMAT_VERSION = 2  # 2: the scene's serving plate widens the state and the sensor rows


@dataclass
class Trajectory:
    """One trial.

    Attributes:
        task: the TaskSpec it ran.
        control_hz: env control rate.
        seed: the reset seed (None when started from a given state).
        initial_state: (state_size,) float64 MuJoCo integration state at t = 0.
        disturbance: the push drawn at reset, if any.
        actions: (T, 5) float32 normalised spatula targets, as the env consumed them.
        proprio: (T + 1, 15) float32 proprioception observed before each action and after the last.
        sensors: (T, nsensordata) float64 control-rate sensor rows (see ``EggFlipPhysics.record``).
        outcome: the scorer's ``Outcome`` as a dict.
        meta: free-form provenance (e.g. which motion produced it).
    """

    task: TaskSpec
    control_hz: float
    seed: int | None
    initial_state: np.ndarray
    disturbance: Disturbance | None
    actions: np.ndarray
    proprio: np.ndarray
    sensors: np.ndarray
    outcome: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> bool:
        return bool(self.outcome["success"])

    def __len__(self) -> int:
        return len(self.actions)

    # ------------------------------------------------------------------ views
    def record(self) -> dict[str, np.ndarray]:
        """The sensor rows by sensor name, (T, dim) each (what the scorer reads)."""
        return {name: self.sensors[:, s] for name, s in sensor_layout(salt=self.task.with_salt).items()}

    def egg_states(self) -> np.ndarray:
        """(T, 13) egg position (from the pan centre), quaternion, linear and angular velocity after
        each step."""
        r = self.record()
        return np.concatenate([r["egg_pos"], r["egg_quat"], r["egg_linvel"], r["egg_angvel"]], axis=1)

    def events(self, thresholds: Thresholds | None = None) -> dict[str, np.ndarray]:
        """The scorer's per-step events (see ``robo_coevolve.scoring.events.step_events``)."""
        return step_events(self.record(), thresholds or Thresholds())

    def observations(self, image_size: int | None = 64, point_cloud: int | None = None) -> dict[str, Any]:
        """Re-simulate the trial to render what a policy would have seen: a dict of (T + 1, ...)
        arrays (``proprio``, ``egg``, and ``image`` / ``points`` when asked for) and the
        ``instruction``. Images are made on demand like this rather than stored with every trial."""
        env = EggFlipEnv(
            task=self.task, control_hz=self.control_hz, image_size=image_size, point_cloud=point_cloud
        )
        try:
            obs, _ = env.reset_to_state(self.initial_state, self.disturbance)
            frames = [obs]
            for action in self.actions:
                frames.append(env.step(action)[0])
        finally:
            env.close()
        out: dict[str, Any] = {k: np.stack([f[k] for f in frames]) for k in frames[0] if k != "instruction"}
        out["instruction"] = self.task.instruction
        return out

    @classmethod
    def from_env(
        cls, env: EggFlipEnv, initial_state, actions, proprio, seed: int | None, meta: dict | None
    ) -> Trajectory:
        """The record of the episode ``env`` has just stepped: its task, disturbance, sensor rows
        and outcome, with the given actions and proprioception."""
        return cls(
            task=env.task,
            control_hz=1.0 / env.control_dt,
            seed=seed,
            initial_state=np.asarray(initial_state, dtype=np.float64).copy(),
            disturbance=env.disturbance,
            actions=np.asarray(actions, dtype=np.float32).reshape(-1, 5),
            proprio=np.asarray(proprio, dtype=np.float32),
            sensors=env.sensor_rows(),
            outcome=env.outcome().to_dict(),
            meta=dict(meta or {}),
        )

    # ------------------------------------------------------------------ storage
    def save(self, path: str | Path) -> Path:
        """Write ``path`` (.npz); returns it."""
        path = Path(path)
        header = {
            "format_version": FORMAT_VERSION,
            "mujoco_version": mujoco.__version__,
            "task": self.task.to_dict(),
            "control_hz": self.control_hz,
            "seed": self.seed,
            "disturbance": None if self.disturbance is None else vars(self.disturbance),
            "outcome": self.outcome,
            "meta": self.meta,
        }
        with file_aside(path) as tmp, open(tmp, "wb") as f:  # a crash leaves the old file or the new
            np.savez_compressed(
                f,
                header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                initial_state=self.initial_state,
                actions=self.actions,
                proprio=self.proprio,
                sensors=self.sensors,
            )
        return path

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        path = Path(path)
        try:
            with np.load(path) as z:
                header = json.loads(z["header"].tobytes().decode())
                arrays = {k: z[k] for k in ("initial_state", "actions", "proprio", "sensors")}
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not a readable robo_coevolve trajectory: {exc}") from exc
        if header.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{path} has trajectory format {header.get('format_version')}, this version "
                f"reads {FORMAT_VERSION}"
            )
        dist = header["disturbance"]
        return cls(
            task=TaskSpec.from_dict(header["task"]),
            control_hz=header["control_hz"],
            seed=header["seed"],
            disturbance=None if dist is None else Disturbance(**{**dist, "force": tuple(dist["force"])}),
            outcome=header["outcome"],
            meta=header["meta"],
            **arrays,
        )


def run_actions(
    env: EggFlipEnv, actions: np.ndarray, seed: int | None = None, meta: dict | None = None
) -> Trajectory:
    """Reset ``env`` with ``seed`` and step normalised ``actions`` (stops early if the episode ends)."""
    obs, _ = env.reset(seed=seed)
    return _step_through(env, obs, actions, seed, meta)


def run_motion(env: EggFlipEnv, motion_fn, seed: int | None = None, meta: dict | None = None) -> Trajectory:
    """Reset ``env``, build a motion from the first observation with ``motion_fn(obs)`` (e.g. a
    scripted motion) and run it for the task's horizon."""
    obs, _ = env.reset(seed=seed)
    actions = env.pose_to_action(motion_fn(obs).targets(env.control_dt, env.horizon_steps))
    return _step_through(env, obs, actions, seed, meta)


def replay(traj: Trajectory, env: EggFlipEnv | None = None) -> Trajectory:
    """Re-simulate ``traj`` from its initial state and actions; returns the new Trajectory.

    ``env`` (built with the same control rate) is reset to the trajectory's task; without one, a
    state-only env is made for the purpose.
    """
    own = env is None
    env = env or EggFlipEnv(task=traj.task, control_hz=traj.control_hz)
    try:
        if abs(env.control_dt * traj.control_hz - 1) > 1e-9:
            raise ValueError(
                f"env runs at {1 / env.control_dt:g} Hz, the trajectory at {traj.control_hz:g} Hz"
            )
        obs, _ = env.reset_to_state(traj.initial_state, traj.disturbance, task=traj.task)
        return _step_through(env, obs, traj.actions, traj.seed, dict(traj.meta, replayed=True))
    finally:
        if own:
            env.close()


def _step_through(env: EggFlipEnv, obs, actions, seed, meta) -> Trajectory:
    initial_state = env.initial_state.copy()
    proprio = [obs["proprio"]]
    done_actions = []
    for action in np.asarray(actions, dtype=np.float32):
        obs, _, terminated, truncated, _ = env.step(action)
        proprio.append(obs["proprio"])
        done_actions.append(action)
        if terminated or truncated:
            break
    return Trajectory.from_env(env, initial_state, done_actions, proprio, seed, meta)
