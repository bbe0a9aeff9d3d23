"""A finished (or stopped) main-job run as the benchmark commands read it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from robo_coevolve.evolve.run_state import RunState, checkpoint_name
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillTree


@dataclass
class Run:
    """A run directory, its saved state and its per-iteration metrics."""

    dir: Path
    state: RunState

    @cached_property
    def metrics(self) -> list[dict]:
        """``metrics.jsonl``, one row per completed iteration."""
        path = self.dir / "metrics.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []

    @cached_property
    def tree(self) -> SkillTree:
        return self.state.skill_tree()

    @property
    def control_hz(self) -> float:
        return float(self.state.config["env"]["control_hz"])

    def node(self, name: str, option: str = "--node"):
        """The tree's node ``name``; a one-line exit naming the tree's nodes if it has none."""
        names = [n.name for n in self.tree.nodes]
        if name not in names:
            raise SystemExit(f"{option} {name}: not in the run's skill tree {names}")
        return self.tree.node(name)

    def policy(self, iteration: int | None = None) -> VLAPolicy:
        """The policy the run kept after ``iteration`` (None: its latest)."""
        if iteration is None:
            return VLAPolicy.from_pretrained(self.dir / self.state.checkpoint)
        return VLAPolicy.from_pretrained(self.dir / "checkpoints" / checkpoint_name(iteration))

    def first_iteration(self, node: str) -> int | None:
        """The iteration that first trained ``node`` (None: never)."""
        return next((r["iteration"] for r in self.metrics if r["node"] == node), None)


def load_run(run_dir: str | Path) -> Run:
    """The run in ``run_dir``; a one-line exit when it is none, or has no completed iteration."""
    run_dir = Path(run_dir)
    try:
        state = RunState.load(run_dir)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if state is None:
        raise SystemExit(
            f"{run_dir} has no completed iteration (no state.json): "
            "pass the hydra.run.dir of a main-job run (python -m robo_coevolve)"
        )
    return Run(run_dir, state)
