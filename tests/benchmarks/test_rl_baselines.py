"""benchmarks/rl_baselines.py as users run it: a few seconds of PPO and SAC, two held-out tasks."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "rl_baselines.py"

pytest.importorskip("stable_baselines3")  # the rl extra


def run(*args, module=False):
    command = [sys.executable, "-m", "benchmarks.rl_baselines"] if module else [sys.executable, str(SCRIPT)]
    return subprocess.run([*command, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_tiny_budget_trains_evaluates_and_reports_beside_the_loop(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    iterations = [
        {"iteration": 1, "node": "scoop", "seconds": 30.0, "success": {"scoop": 0.5}, "mastered": False},
        {"iteration": 2, "node": "scoop", "seconds": 60.0, "success": {"scoop": 0.97}, "mastered": True},
        {"iteration": 3, "node": "flip", "seconds": 120.0, "success": {"flip": 0.4}, "mastered": False},
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in iterations))
    out = tmp_path / "out.json"
    budget = 0.05  # minutes
    proc = run(
        "--skills", "scoop", "flip", "--seeds", "0", "--minutes", str(budget), "--eval-tasks", "2",
        "--learning-starts", "50", "--loop-run", str(run_dir), "--json", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    keys = {"command", "machine", "settings", "eval_seed", "eval_tasks", "loop", "runs", "summary"}
    assert keys <= set(report)
    assert {(r["algo"], r["skill"]) for r in report["runs"]} == {
        (a, s) for a in ("ppo", "sac") for s in ("scoop", "flip")
    }
    for r in report["runs"]:
        assert 0.0 <= r["held_out"]["success"] <= 1.0
        assert r["held_out"]["tasks"] == 2 and sum(r["held_out"]["reasons"].values()) == 2
        assert r["env_steps"] > 0 and r["curve"]
        # The deadline stops training at the budget (the last update may run over a little).
        assert budget <= r["train_minutes"] < budget + 0.5
    for s in report["summary"]:
        assert 0.0 <= s["success_mean"] <= 1.0 and s["seeds"] == [0]
    # The loop's time to mastery sums the iterations up to the mastering one; flip never mastered.
    scoop, flip = report["loop"]["skills"]["scoop"], report["loop"]["skills"]["flip"]
    assert scoop == {"minutes": pytest.approx(1.5), "success": 0.97, "mastered": True}
    assert flip == {"minutes": pytest.approx(3.5), "success": 0.4, "mastered": False}
    assert "loop (to mastery) | scoop" in proc.stdout and "not measured in this run" in proc.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--minutes", "scoop=six"], "SKILL=NUMBER"),
        (["--skills", "scoop", "flip", "--minutes", "scoop=6"], "no budget for flip"),
        (["--loop-run", "/nonexistent"], "no metrics.jsonl"),
    ],
)
def test_bad_input_gets_one_line(args, message):
    proc = run(*args, module=True)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
