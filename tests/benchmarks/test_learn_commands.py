"""``python -m benchmarks.learn``: each subcommand at the smallest sizes."""

from __future__ import annotations

import pytest
from bench_commands import bench, is_rate

pytestmark = pytest.mark.slow


def test_clone_trains_and_runs_a_policy_on_a_runs_library(tiny_run, tmp_path):
    report = bench(
        "learn",
        *("clone", "--library", str(tiny_run / "library"), "--skills", "scoop", "--variants", "state"),
        *("--steps", "30", "--eval", "4", "--skip-extras", "--workers", "1"),
        json_path=tmp_path / "c.json",
    )
    (row,) = report["clone"]
    assert row["skill"] == "scoop" and row["steps"] == 30 and is_rate(row["success"])
    assert row["segments"] == report["library"]["scoop"] > 0


def test_answer_clone_runs_the_answer_and_its_clone_on_the_hard_set(tmp_path):
    rows = bench(
        "learn",
        *("answer-clone", "--searches", "heavy", "--trials", "400", "--demos", "20"),
        *("--hard", "2", "--standard", "4", "--steps", "30"),
        json_path=tmp_path / "a.json",
    )
    heavy = rows["heavy egg (80 g)"]
    assert 0 < heavy["segments"] <= 20
    for what in ("answer", "clone"):
        assert len(heavy[what]) == 8  # six hard variants, their mean and the standard set
        assert all(is_rate(x) for x in heavy[what].values())
