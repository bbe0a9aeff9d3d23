"""Where the scenes, meshes and configs live, in a source checkout and in an installed wheel.

A checkout keeps them at the top level (``envs/``, ``assets/``, ``conf/``); the wheel carries the
same folders under ``robo_coevolve/_data/`` (see ``pyproject.toml``), with their relative layout
unchanged so that a scene's ``meshdir`` resolves in both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_root() -> Path:
    """The folder that holds ``envs/``, ``assets/`` and ``conf/``."""
    for root in (_PACKAGE / "_data", _PACKAGE.parent):
        if (root / "envs").is_dir() and (root / "conf").is_dir():
            return root
    raise FileNotFoundError(
        f"robo_coevolve's data folders (envs/, assets/, conf/) are missing next to {_PACKAGE}: "
        "reinstall the package (pip install -e . from a checkout, or the wheel)"
    )


def scene_path(env_name: str = "egg_flip") -> Path:
    """Path of ``envs/<env_name>/scene.xml``."""
    path = data_root() / "envs" / env_name / "scene.xml"
    if not path.is_file():
        known = sorted(p.name for p in (data_root() / "envs").iterdir() if p.is_dir())
        raise FileNotFoundError(f"no scene {path}: known environments are {known}")
    return path


def conf_dir() -> Path:
    """The Hydra config folder."""
    return data_root() / "conf"
