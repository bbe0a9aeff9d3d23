"""The egg-flip environment: physics, start-state draws, rendering, point clouds."""

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.physics import EggFlipPhysics

__all__ = ["EggFlipEnv", "EggFlipPhysics"]
