"""Open-loop plans: what a trial does, decided once from its first observation.

A plan turns the first observation of an episode into the whole episode's normalised actions
(``(horizon_steps, 5)``, see ``EggFlipEnv``). Plans are small frozen values, so trials can be
listed, sent to workers and recorded in a trajectory's ``meta``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from robo_coevolve.explore import primitives
from robo_coevolve.explore.noise import NoiseSpec

if TYPE_CHECKING:
    from robo_coevolve.env.egg_flip import EggFlipEnv


class Plan(Protocol):
    def actions(self, obs: dict, env: EggFlipEnv) -> np.ndarray:
        """(env.horizon_steps, 5) normalised actions for the episode that starts with ``obs``."""

    def describe(self) -> dict[str, Any]:
        """JSON-safe provenance stored in the trajectory's ``meta``."""


@dataclass(frozen=True, eq=False)
class PrimitivePlan:
    """A motion primitive with unit-cube parameters ``params`` in the family of the task's skill
    (``explore.primitives.family``)."""

    params: np.ndarray

    def actions(self, obs: dict, env: EggFlipEnv) -> np.ndarray:
        motion = primitives.family(env.task.skill).motion(self.params, obs)
        return env.pose_to_action(motion.targets(env.control_dt, env.horizon_steps))

    def describe(self) -> dict[str, Any]:
        return {"plan": "primitive", "params": np.asarray(self.params, np.float64).tolist()}


@dataclass(frozen=True)
class NoisePlan:
    """Random smooth motion: the start pose plus correlated noise drawn from ``seed`` (the
    no-primitive baseline)."""

    noise: NoiseSpec
    seed: int

    def actions(self, obs: dict, env: EggFlipEnv) -> np.ndarray:
        start = env.pose_to_action(np.asarray(obs["proprio"][:5]))
        drift = self.noise.sample(np.random.default_rng(self.seed), env.horizon_steps)
        return np.clip(start + drift, -1.0, 1.0).astype(np.float32)

    def describe(self) -> dict[str, Any]:
        return {
            "plan": "noise",
            "noise": vars(self.noise) | {"scale": list(self.noise.scale)},
            "seed": self.seed,
        }


@dataclass(frozen=True, eq=False)
class ActionPlan:
    """Fixed normalised actions (padded by holding the last one, cut at the horizon)."""

    actions_: np.ndarray

    def actions(self, obs: dict, env: EggFlipEnv) -> np.ndarray:
        a = np.asarray(self.actions_, np.float32).reshape(-1, 5)
        steps = env.horizon_steps
        if len(a) < steps:
            a = np.concatenate([a, np.repeat(a[-1:], steps - len(a), axis=0)])
        return np.clip(a[:steps], -1.0, 1.0)

    def describe(self) -> dict[str, Any]:
        return {"plan": "actions"}
