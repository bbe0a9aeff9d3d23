"""The benchmark commands' smoke tests' helpers: a tiny main-job run's overrides, a command runner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# One iteration that masters scoop at a token threshold (as tests/evolve/test_loop.py's tiny run):
# a search answer, segments of iteration 1, a checkpoint and metrics.
TINY = [
    "seed=0",
    "budget.iterations=1",
    "budget.until=null",
    "explore.budget=300",
    "explore.population=50",
    "explore.select_trials=10",
    "explore.demos=40",
    "explore.restarts=0",
    "explore.polish=null",
    "explore.schedule.trials=40",
    "explore.backend.workers=2",
    "train.fit.steps=200",
    "train.fit.eval_every=100",
    "train.select_episodes=4",
    "skill_tree.nodes.scoop.eval_tasks=8",
    "skill_tree.nodes.scoop.mastery=0.05",
    "workspace.refine_successes=60",
    "workspace.video.every=0",
]


def make_tiny_run(run_dir: Path, *overrides: str) -> Path:
    """The main job's tiny run (``TINY``, then ``overrides``) in ``run_dir``."""
    proc = subprocess.run(
        [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={run_dir}", *TINY, *overrides],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


def bench(command: str, *args: str, json_path: Path | None = None, timeout: int = 600):
    """Run ``python -m benchmarks.<command> ARGS [--json json_path]`` from the repository root;
    the JSON it wrote (None without ``json_path``)."""
    extra = ["--json", str(json_path)] if json_path is not None else []
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{command}", *args, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(json_path.read_text()) if json_path is not None else None


def is_rate(x) -> bool:
    return isinstance(x, float) and 0.0 <= x <= 1.0


def refusal(command: str, *args: str) -> str:
    """The stderr of ``python -m benchmarks.<command> ARGS``, which must fail without a traceback."""
    proc = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{command}", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stderr
