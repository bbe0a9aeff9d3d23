"""robo_coevolve: a robot teaches itself to cook in MuJoCo, without demonstrations."""

import os

# Offscreen rendering needs a GL backend chosen before mujoco is first imported; EGL works
# headless. A value the user set wins.
os.environ.setdefault("MUJOCO_GL", "egl")

import logging  # noqa: E402

import gymnasium  # noqa: E402
import mujoco  # noqa: E402

from robo_coevolve.task_spec import SKILLS, TaskSpec, TaskSpecError  # noqa: E402

__version__ = "0.2.0"
ENV_ID = "robo_coevolve/EggFlip-v0"


def register_envs() -> None:
    """Register ``robo_coevolve/EggFlip-v0`` with gymnasium (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="robo_coevolve.env.egg_flip:EggFlipEnv")


register_envs()

# MuJoCo prints its warnings to stdout and appends them to MUJOCO_LOG.TXT in the working
# directory. Exploration makes unstable trials on purpose (they are recorded as diverged), so
# route the warnings to the "mujoco" logger at DEBUG instead, unless the user installed a handler.
if mujoco.get_mju_user_warning() is None:
    _mujoco_log = logging.getLogger("mujoco")
    mujoco.set_mju_user_warning(lambda message: _mujoco_log.debug("%s", message))

__all__ = ["ENV_ID", "SKILLS", "TaskSpec", "TaskSpecError", "register_envs", "__version__"]
