"""The inputs the commands share (policy checkpoints, run directories and their saved state), each
checked so that a wrong one raises ``UsageError`` naming it and what to give instead. The path
checks also serve as argparse types: the error passes through argparse to ``command``."""

from __future__ import annotations

from pathlib import Path

from robo_coevolve.cli.errors import UsageError
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.policy.vla import CONFIG_NAME

RUN_MARKER = Path(".hydra") / "overrides.yaml"  # written by `python -m robo_coevolve` as it starts


def checkpoint(text: str) -> Path:
    """A policy checkpoint directory (what ``VLAPolicy.save_pretrained`` wrote)."""
    path = Path(text)
    if not (path / CONFIG_NAME).is_file():
        problem = "does not exist" if not path.exists() else f"has no {CONFIG_NAME}"
        raise UsageError(
            f"policy checkpoint {path} {problem}: give a directory VLAPolicy.save_pretrained wrote, "
            "e.g. RUN/checkpoints/iter_0002"
        )
    return path


def run_directory(text: str) -> Path:
    """A run directory (what ``python -m robo_coevolve`` wrote)."""
    path = Path(text)
    if not path.is_dir():
        raise UsageError(
            f"run directory {path} does not exist: give the hydra.run.dir of a robo-coevolve run"
        )
    if not (path / RUN_MARKER).is_file():
        raise UsageError(
            f"{path} is not a robo-coevolve run directory (no {RUN_MARKER}): give the hydra.run.dir "
            "of a robo-coevolve run"
        )
    return path


def saved_state(run_dir: Path) -> RunState | None:
    """The run's state after its last completed iteration (None before the first)."""
    try:
        return RunState.load(run_dir)
    except ValueError as e:  # an unreadable state.json
        raise UsageError(str(e)) from None
