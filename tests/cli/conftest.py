"""The run directories, skill files and checkpoints the commands read."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from scripted_segments import scripted_segments

from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy


@pytest.fixture
def new_run(tmp_path) -> Path:
    """A run directory as ``python -m robo_coevolve`` leaves it when started (no iteration yet)."""
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("[]\n")
    return run


@pytest.fixture(scope="session")
def skill_file(tmp_path_factory) -> Path:
    """A healthy scoop skill file (two segments)."""
    library = SkillLibrary(tmp_path_factory.mktemp("library"))
    library.add(scripted_segments("scoop", 2))
    return library.path("scoop")


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory) -> Path:
    """A small state policy's checkpoint."""
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("policy") / "checkpoint"
    VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True)).save_pretrained(path)
    return path
