"""``python -m benchmarks.evaluate``: each subcommand, at the smallest sizes, on a tiny run."""

from __future__ import annotations

import pytest
from bench_commands import bench, is_rate, refusal

pytestmark = pytest.mark.slow


def test_run_compares_the_loop_with_its_baselines_by_paired_margins(tiny_run, tmp_path):
    report = bench(
        "evaluate", "run", str(tiny_run), "--tasks", "6", "--bc-seeds", "2", json_path=tmp_path / "r.json"
    )
    scoop = report["nodes"]["scoop"]
    for arm in ("primitives alone", "BC once", "loop, first iteration", "co-evolution"):
        assert is_rate(scoop[arm]), arm
    assert len(scoop["BC once, each clone"]) == 2
    assert scoop["against"] in ("primitives alone", "BC once")
    margin = scoop["co-evolution"] - scoop[scoop["against"]]
    assert scoop["margin"] == pytest.approx(margin)
    lo, hi = scoop["interval"]
    assert lo <= scoop["margin"] <= hi
    assert len(scoop["by egg mass"]["edges (kg)"]) == 6
    assert report["tree"]["co-evolution"] == pytest.approx(scoop["co-evolution"])
    assert [row["iteration"] for row in report["curve"]] == [1]


def test_a_push_the_tasks_cannot_take_and_a_missing_run_are_one_line(tiny_run, tmp_path):
    assert "--push 9.0" in refusal("evaluate", "run", str(tiny_run), "--push", "9")
    assert "no completed iteration" in refusal("evaluate", "stage", str(tmp_path), "--node", "scoop")


def test_stage_replays_the_nodes_first_clone_per_seed(tiny_run, tmp_path):
    report = bench(
        "evaluate",
        *("stage", str(tiny_run), "--node", "scoop", "--iteration", "1", "--seeds", "0", "1"),
        *("--eval", "4", "--train", '{"steps": 30, "eval_every": 30}'),
        json_path=tmp_path / "s.json",
    )
    assert [row["seed"] for row in report["rows"]] == [0, 1]
    assert all(is_rate(row["success"]["scoop"]) and row["steps"] == 30 for row in report["rows"])


def test_start_states_clones_with_and_without_the_teachers_first_chunks(tiny_run, tmp_path):
    report = bench(
        "evaluate",
        *("start-states", str(tiny_run), "--node", "scoop", "--starts", "10", "--seeds", "0", "--tasks", "5"),
        json_path=tmp_path / "s.json",
    )
    assert is_rate(report["answer"]["success"])
    assert list(report["arms"]) == ["demonstrations", "+ 10 start states"]
    for rows in report["arms"].values():
        assert len(rows) == 1 and is_rate(rows[0]["success"]) and rows[0]["kept"] == {}


def test_policy_noise_runs_every_temperature_on_each_node(tiny_run, tmp_path):
    report = bench(
        "evaluate",
        *("policy-noise", str(tiny_run), "--tasks", "4", "--temperatures", "0", "0.02", "--workers", "1"),
        json_path=tmp_path / "p.json",
    )
    assert list(report["success"]["scoop"]) == ["0", "0.02"]
    assert all(is_rate(x) for x in report["success"]["scoop"].values())


def test_sweep_runs_every_value_of_the_field_for_each_policy(tiny_run, tmp_path):
    checkpoint = sorted((tiny_run / "checkpoints").iterdir())[-1]
    report = bench(
        "evaluate",
        *("sweep", str(tiny_run), "--field", "action_latency", "--values", "0", "2", "--tasks", "3"),
        *("--policy", f"a={checkpoint}", "--policy", f"b={checkpoint}", "--workers", "1"),
        json_path=tmp_path / "s.json",
    )
    rows = report["success"]["scoop"]
    assert list(rows) == ["0", "2"] and all(list(r) == ["a", "b"] for r in rows.values())
    assert all(r["a"] == r["b"] and is_rate(r["a"]) for r in rows.values())  # one policy, twice
    assert "servo_gain=9.0 is outside" in refusal(
        "evaluate", "sweep", str(tiny_run), "--field", "servo_gain", "--values", "9"
    )


def test_distill_measures_the_teacher_without_parts_of_its_egg_state(tiny_run, tmp_path):
    report = bench(
        "evaluate",
        *("distill", str(tiny_run), "--skill", "scoop", "--tasks", "3", "--velocity-error", "0.01"),
        json_path=tmp_path / "d.json",
    )
    assert len(report["teacher"]) == 7
    assert all(is_rate(v["success"]) for v in report["teacher"].values())


def test_diversity_grows_two_libraries_from_the_runs_first_segments(tiny_run, tmp_path):
    curve = bench(
        "evaluate",
        *("diversity", str(tiny_run), "--node", "scoop", "--iterations", "2", "--trials", "20"),
        json_path=tmp_path / "d.json",
    )
    assert [row["iteration"] for row in curve] == [1, 2]
    assert curve[1]["stored_off"] >= curve[1]["stored_on"] >= curve[0]["stored_on"]
