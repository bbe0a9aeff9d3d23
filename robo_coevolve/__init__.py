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
ENV_ID = "robo_coevolve/EggFlip-v0"  # any skill (``skill=`` picks it; scoop by default)
# One id per skill, with that skill's TaskSpec and horizon: robo_coevolve/Scoop-v0, ...
SKILL_ENV_IDS = {skill: f"robo_coevolve/{skill.capitalize()}-v0" for skill in SKILLS}
_ENTRY_POINT = "robo_coevolve.env.egg_flip:EggFlipEnv"
_DEFAULT_CONTROL_HZ = 50.0  # EggFlipEnv's default: the per-skill ids' step limits assume it


def register_envs() -> None:
    """Register ``ENV_ID`` and the per-skill ids of ``SKILL_ENV_IDS`` with gymnasium (idempotent).

    A per-skill id's ``max_episode_steps`` is its task's horizon at the default control rate; pass
    ``max_episode_steps`` to ``gymnasium.make`` along with another ``control_hz``."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point=_ENTRY_POINT)
    for skill, env_id in SKILL_ENV_IDS.items():
        if env_id not in gymnasium.registry:
            horizon = TaskSpec.for_skill(skill).horizon
            gymnasium.register(
                id=env_id,
                entry_point=_ENTRY_POINT,
                kwargs={"skill": skill},
                max_episode_steps=int(round(horizon * _DEFAULT_CONTROL_HZ)),
            )


register_envs()

# MuJoCo prints its warnings to stdout and appends them to MUJOCO_LOG.TXT in the working
# directory. Exploration makes unstable trials on purpose (they are recorded as diverged), so
# route the warnings to the "mujoco" logger at DEBUG instead, unless the user installed a handler.
if mujoco.get_mju_user_warning() is None:
    _mujoco_log = logging.getLogger("mujoco")
    mujoco.set_mju_user_warning(lambda message: _mujoco_log.debug("%s", message))

__all__ = ["ENV_ID", "SKILL_ENV_IDS", "SKILLS", "TaskSpec", "TaskSpecError", "register_envs", "__version__"]
