"""``python -m benchmarks.coevolve``: one arm's tiny loop, then its policy on the hard set."""

from __future__ import annotations

import json

import pytest
from bench_commands import TINY, bench, is_rate

from robo_coevolve.evaluation import HARD

pytestmark = pytest.mark.slow

# The tiny run's search and training sizes; the command sets the budget, trials and workers itself.
SIZES = [
    o for o in TINY if o.startswith(("explore.p", "explore.s", "explore.d", "explore.r", "train.", "skill_"))
]
SIZES = [o for o in SIZES if not o.startswith(("explore.schedule", "skill_tree.nodes.scoop.eval_tasks"))]


def test_an_arm_runs_its_loop_and_is_judged_on_every_hard_variant(tmp_path):
    bench(
        "coevolve",
        *("--out", str(tmp_path), "--arms", "uniform", "--iterations", "1", "--search", "300"),
        *("--loop-eval", "8", "--hard", "2", "--standard", "4", "--workers", "2", "--extra", *SIZES),
    )
    arm = json.loads((tmp_path / "report.json").read_text())["uniform"]["0"]
    assert set(arm["hard_variants"]) == set(HARD)
    assert is_rate(arm["hard"]) and is_rate(arm["standard"]) and arm["iterations"] == 1
