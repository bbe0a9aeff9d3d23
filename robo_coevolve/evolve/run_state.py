"""RunState: what a run has completed, persisted after every iteration so a killed run resumes.

``state.json`` in the run directory is the commit point of an iteration: everything an iteration
writes before it (library segments, a checkpoint, metrics lines) belongs to the run only once the
state that counts the iteration is on disk. A resumed run rolls back whatever an interrupted
iteration left behind (``rollback``) and redoes that iteration from the same seeds, so it ends
with the library and metrics an uninterrupted run would have.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from robo_coevolve.atomic import write_text_atomic
from robo_coevolve.library.skill_library import SkillLibrary
from robo_coevolve.skill_tree import SkillTree

STATE_FILE = "state.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINTS = "checkpoints"
POOLS = "coevolve"  # task pools of co-evolution, one file per node and iteration


def pool_name(node: str, iteration: int) -> str:
    return f"{node}_{iteration:04d}.json"


def _pool_iteration(name: str) -> int | None:
    stem = name.removesuffix(".json")
    tail = stem.rpartition("_")[2]
    return int(tail) if name.endswith(".json") and tail.isdigit() else None


def checkpoint_name(iteration: int) -> str:
    return f"iter_{iteration:04d}"


class ResumeError(ValueError):
    """A run directory that cannot be resumed as asked (it holds a run with another config)."""


@dataclass
class RunState:
    """A run's progress after ``iteration`` completed iterations.

    Args:
        iteration: completed iterations.
        tree: ``SkillTree.to_dict()``.
        nodes: per node, what the explorer found (``modes``, ``best_params`` in unit-cube
            parameters) and counters (``trials``, ``iterations``).
        library: segments per skill in the library.
        checkpoint: the latest policy checkpoint, relative to the run directory (None: no policy).
        trained_node: the node the policy was last trained on (a new node starts a new stage).
        trials: trials run so far, all nodes.
        elapsed_s: wall time spent in completed iterations.
        config: the run's resolved config (without its budget), to refuse resuming another run.
        recipes: per recipe, its latest evaluation (``recipe.evaluate_recipe``'s report, with the
            checkpoint it ran).
        pools: per node, the task pool file of this iteration (relative to the run directory;
            co-evolution only).
    """

    iteration: int = 0
    tree: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    library: dict[str, int] = field(default_factory=dict)
    checkpoint: str | None = None
    trained_node: str | None = None
    trials: int = 0
    elapsed_s: float = 0.0
    config: dict[str, Any] = field(default_factory=dict)
    pools: dict[str, str] = field(default_factory=dict)
    recipes: dict[str, Any] = field(default_factory=dict)

    def save(self, run_dir: str | Path) -> None:
        """Write ``state.json`` atomically (the iteration's commit point)."""
        write_text_atomic(Path(run_dir) / STATE_FILE, json.dumps(asdict(self), indent=1))

    def skill_tree(self) -> SkillTree:
        """The run's skill tree (from its resolved config) with the progress this state holds."""
        tree = SkillTree.from_config(
            self.config["skill_tree"]["nodes"], self.config["skill_tree"].get("recipes")
        )
        tree.load_progress(self.tree)
        return tree

    @classmethod
    def load(cls, run_dir: str | Path) -> RunState | None:
        """The saved state of ``run_dir``, or None for a run that has not completed an iteration."""
        path = Path(run_dir) / STATE_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text())
            return cls(**data)
        except (json.JSONDecodeError, TypeError) as e:
            raise ValueError(
                f"{path} is not a robo_coevolve run state ({e}); start the run in a new directory"
            ) from None


def rollback(run_dir: str | Path, state: RunState | None, library: SkillLibrary) -> dict[str, int]:
    """Undo what iterations after ``state`` left in ``run_dir``: library segments beyond the
    saved counts, metrics lines of later iterations, later checkpoints and task pools. Returns the
    segments removed per skill."""
    run_dir = Path(run_dir)
    done = 0 if state is None else state.iteration
    counts = {} if state is None else state.library
    removed = {}
    for skill in library.skills():
        n = library.truncate(skill, counts.get(skill, 0))
        if n:
            removed[skill] = n
    metrics = run_dir / METRICS_FILE
    if metrics.is_file():
        lines = [line for line in metrics.read_text().splitlines() if line.strip()]
        kept = [line for line in lines if json.loads(line)["iteration"] <= done]
        if len(kept) != len(lines):
            write_text_atomic(metrics, "".join(line + "\n" for line in kept))
    checkpoints = run_dir / CHECKPOINTS
    if checkpoints.is_dir():
        for path in checkpoints.iterdir():
            stale = path.name.startswith(".") or (
                path.name.startswith("iter_") and int(path.name.split("_")[1]) > done
            )
            if stale:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    pools = run_dir / POOLS
    if pools.is_dir():
        for path in pools.iterdir():
            k = _pool_iteration(path.name)
            if path.name.startswith(".") or (k is not None and k > done):
                path.unlink()
    train = run_dir / "train"
    if train.is_dir():
        for path in train.iterdir():
            if path.name.startswith("iter_") and int(path.name.split("_")[1]) > done:
                shutil.rmtree(path)
    return removed


def config_differences(saved: dict[str, Any], current: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested config dicts."""
    out = []
    for key in sorted(set(saved) | set(current)):
        a, b = saved.get(key, "<missing>"), current.get(key, "<missing>")
        if isinstance(a, dict) and isinstance(b, dict):
            out += config_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}")
    return out
