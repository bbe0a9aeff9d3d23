"""robo_coevolve: a robot teaches itself to cook in MuJoCo, without demonstrations."""

import os

# Offscreen rendering needs a GL backend chosen before mujoco is first imported; EGL works
# headless. A value the user set wins.
os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium  # noqa: E402

from robo_coevolve.task_spec import SKILLS, TaskSpec, TaskSpecError  # noqa: E402

__version__ = "0.1.0"
ENV_ID = "robo_coevolve/EggFlip-v0"


def register_envs() -> None:
    """Register ``robo_coevolve/EggFlip-v0`` with gymnasium (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="robo_coevolve.env.egg_flip:EggFlipEnv")


register_envs()

__all__ = ["ENV_ID", "SKILLS", "TaskSpec", "TaskSpecError", "register_envs", "__version__"]
