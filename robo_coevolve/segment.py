"""Segment: the refined core of a successful trial, as the skill library stores it.

A segment is a window of a trial (from shortly before the egg is first handled in the attempt that
worked to shortly after the success settles), possibly with smoothed actions, re-simulated from its
own start state so that every array below is what the simulator really did with these actions.
Per step ``t`` (``T`` steps): ``states[t]`` and ``proprio[t]`` / ``egg[t]`` are *before* action
``t``; index ``T`` is after the last action. ``sensors[t]`` is the control-rate sensor row of step
``t`` (see ``EggFlipPhysics.record``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from robo_coevolve.env.initial_state import Disturbance
from robo_coevolve.env.physics import sensor_layout
from robo_coevolve.task_spec import TaskSpec


@dataclass
class Segment:
    """A proven piece of a skill.

    Attributes:
        task: the TaskSpec of the source trial.
        control_hz: env control rate.
        states: (T + 1, state_size) float64 full integration states (``EggFlipPhysics.get_state``);
            ``states[0]`` is where a replay starts.
        disturbance: the source trial's push (its times are absolute episode times, and the states
            carry the time).
        actions: (T, 5) float32 normalised spatula targets.
        proprio: (T + 1, 15) float32 proprioception.
        egg: (T + 1, 13) float32 egg position, quaternion, linear and angular velocity.
        sensors: (T, nsensordata) float64 control-rate sensor rows.
        outcome: the scorer's verdict on this segment alone (a dict of ``Outcome``).
        meta: provenance and refinement stats (source step, iteration, jerk, novelty, ...).
    """

    task: TaskSpec
    control_hz: float
    states: np.ndarray
    disturbance: Disturbance | None
    actions: np.ndarray
    proprio: np.ndarray
    egg: np.ndarray
    sensors: np.ndarray
    outcome: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = len(self.actions)
        shapes = {
            "states": (self.states.shape[0], t + 1),
            "proprio": (self.proprio.shape[0], t + 1),
            "egg": (self.egg.shape[0], t + 1),
            "sensors": (self.sensors.shape[0], t),
        }
        bad = {k: v for k, v in shapes.items() if v[0] != v[1]}
        if bad or self.actions.shape[1:] != (5,):
            raise ValueError(f"segment arrays disagree on length (T = {t} actions): {bad}")

    @property
    def skill(self) -> str:
        return self.task.skill

    @property
    def success(self) -> bool:
        return bool(self.outcome["success"])

    @property
    def start_state(self) -> np.ndarray:
        return self.states[0]

    def __len__(self) -> int:
        return len(self.actions)

    def record(self) -> dict[str, np.ndarray]:
        """The sensor rows by sensor name, (T, dim) each."""
        return {name: self.sensors[:, s] for name, s in sensor_layout(salt=self.task.with_salt).items()}
