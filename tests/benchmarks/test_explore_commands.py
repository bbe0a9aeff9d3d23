"""``python -m benchmarks.explore``: each subcommand at the smallest sizes."""

from __future__ import annotations

import pytest
from bench_commands import bench, is_rate

pytestmark = pytest.mark.slow


def test_search_reports_held_out_success_and_the_random_baselines(tmp_path):
    report = bench(
        "explore",
        *("search", "--skills", "scoop", "--seeds", "0", "--budget", "200", "--eval", "4"),
        *("--select", "5", "--baseline", "10", "--workers", "1"),
        json_path=tmp_path / "s.json",
    )
    (search,) = report["searches"]
    assert 200 <= search["trials"] <= 300 and is_rate(search["held_out"])  # at most a generation over
    assert search["best_mode_held_out"] >= 0.0
    (baseline,) = report["baselines"]
    assert all(is_rate(baseline[k]) for k in ("noise T=0.1", "noise T=0.3", "random primitives"))


def test_early_stop_reports_steps_per_success_with_and_without_the_cut(tmp_path):
    rows = bench(
        "explore",
        *("early-stop", "--skills", "flip", "--trials", "80", "--prefix", "0.5", "--folds", "2"),
        json_path=tmp_path / "e.json",
    )
    (row,) = rows
    assert row["trials"] == 80 and is_rate(row["test_success"])
    assert row["cut_successes"] <= row["cut"] <= 80


def test_refine_counts_what_each_stage_of_the_refiner_keeps(tmp_path):
    rows = bench(
        "explore",
        *("refine", "--skills", "scoop", "--budget", "200", "--out", str(tmp_path / "libs")),
        json_path=tmp_path / "r.json",
    )
    assert [(r["skill"], r["smoothing"]) for r in rows] == [("scoop", True), ("scoop", False)]
    for r in rows:
        assert r["trials"] == 200 and r["stored"] <= r["successes"] <= r["trials"]
