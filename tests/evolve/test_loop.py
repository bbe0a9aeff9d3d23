"""The evolution loop as users launch it (``python -m robo_coevolve``): a tiny run writes every
artefact, a SIGKILLed run resumes to the same library and metrics, bad overrides fail first."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from run_killer import kill_when

from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import VLAPolicy

# Scoop is mastered at a token threshold in iteration 1, so iteration 2 searches flip and trains
# it rehearsing scoop, and masters it at a bar a clone of this little data clears whatever its
# training seed (unlocking catch): every stage of the loop runs in about a minute.
TINY = [
    "explore.budget=300",
    "explore.population=50",
    "explore.select_trials=10",
    "explore.demos=40",
    "explore.restarts=0",  # one search, below its demo bar (restarts: tests/explore/test_search.py)
    "explore.polish=null",  # (polish: tests/explore/test_search.py)
    "explore.schedule.trials=40",
    "explore.backend.workers=2",
    "train.fit.steps=600",
    "train.fit.eval_every=100",
    "train.finetune_steps=100",
    "train.select_episodes=4",
    "skill_tree.nodes.scoop.eval_tasks=16",
    "skill_tree.nodes.scoop.mastery=0.05",
    "skill_tree.nodes.flip.eval_tasks=16",
    "skill_tree.nodes.flip.mastery=0.5",
    "skill_tree.recipes.cook.stages=[scoop,flip]",  # both mastered: the run ends with the recipe
    "skill_tree.recipes.cook.eval_tasks=4",
    "budget.iterations=2",
    "workspace.refine_successes=60",
    "budget.until=null",
    "workspace.video.size=[96,72]",
    "workspace.video.frame_every=10",
]
TIMING = {"seconds"}


def command(run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={run_dir}", *TINY, *overrides]


def run(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(run_dir, *overrides), capture_output=True, text=True, timeout=600)


def metrics(run_dir: Path) -> list[dict]:
    """metrics.jsonl without wall times."""

    def strip(d):
        return {k: strip(v) if isinstance(v, dict) else v for k, v in d.items() if k not in TIMING}

    return [strip(json.loads(line)) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def library_content(run_dir: Path) -> dict:
    lib = SkillLibrary(run_dir / "library", create=False)
    return {
        skill: [(s.actions.tobytes(), s.states.tobytes(), s.meta, s.task) for s in lib.segments(skill)]
        for skill in lib.skills()
    }


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("evolve") / "run"
    proc = run(run_dir)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


def test_a_tiny_run_masters_scoop_unlocks_flip_and_writes_every_artefact(uninterrupted):
    d = uninterrupted
    rows = metrics(d)
    assert [r["node"] for r in rows] == ["scoop", "flip"]
    assert rows[0]["explore"]["kind"] == rows[1]["explore"]["kind"] == "search"  # from zero demos
    assert rows[0]["mastered"] and rows[0]["success"]["scoop"] >= 0.05
    assert set(rows[1]["success"]) == {"flip", "scoop"}  # flip evaluated, and scoop for forgetting
    assert rows[1]["library"]["scoop"] == rows[0]["library"]["scoop"] > 0 and rows[1]["library"]["flip"] > 0
    summary = json.loads((d / "summary.json").read_text())
    assert summary["stopped"] == "iterations" and summary["iterations"] == 2
    assert summary["status"] == {
        "scoop": "mastered",
        "flip": "mastered",
        "catch": "active",
        "toss": "active",
        "serve": "active",
        "serve_turned": "locked",
        "season": "locked",
    }
    # the recipe (scoop then flip here) ran once its stages were mastered, with its own video
    cook = summary["recipes"]["cook"]
    assert cook == json.loads((d / "recipes" / "cook.json").read_text())
    assert (
        cook["n"] == 4
        and cook["stages"] == ["scoop", "flip"]
        and cook["checkpoint"] == "checkpoints/iter_0002"
    )
    assert set(cook["completed"]) == {"scoop", "flip"} and 0 <= cook["success"] <= cook["completed"]["scoop"]
    assert cook["product"] == pytest.approx(rows[1]["success"]["scoop"] * rows[1]["success"]["flip"])
    assert (d / cook["videos"]["best"]).stat().st_size > 1000
    assert summary["library_digest"] == SkillLibrary(d / "library").digest()
    state = json.loads((d / "state.json").read_text())
    assert state["iteration"] == 2 and state["checkpoint"] == "checkpoints/iter_0002"
    policy = VLAPolicy.from_pretrained(d / state["checkpoint"])
    assert not policy.config.use_image and policy.config.use_language  # policy=state
    for name in ("progress.png", "skill_tree.png"):
        assert (d / name).read_bytes()[:4] == b"\x89PNG"
    for k, node in ((1, "scoop"), (2, "flip")):
        assert (d / "videos" / f"iter{k:03d}_{node}_best.mp4").stat().st_size > 1000
    assert list((d / "train" / "iter_0001").rglob("metrics.jsonl"))  # per example set when they compete
    # Flip's answer fell short of the bar (36 of 40 demonstrations here), so a clone of each example
    # set competed on the selection tasks, and only the winner's segments were stored.
    flip = rows[1]
    assert flip["explore"]["demo_success"] < 0.95
    assert flip["explore"]["contenders"]["search"] > 0 and flip["explore"]["contenders"]["demonstrations"] > 0
    selection = flip["train"]["selection"]
    sets = selection["example_sets"]
    # Each round clones both sets; rounds are redrawn (train.redraws=2) until a clone holds
    # every bar on the selection tasks (flip 0.5, scoop 0.05 here).
    rounds = 1 + selection.get("redraws", 0)
    assert sets == ["search", "demonstrations"] * rounds and len(selection["candidates"]) == 2 * rounds
    held = [i // 2 for i, c in enumerate(selection["candidates"]) if c["flip"] >= 0.5 and c["scoop"] >= 0.05]
    assert rounds == (held[0] + 1 if held else 3)
    assert flip["explore"]["examples"] == sets[selection["own_best"]]
    assert flip["library"]["flip"] == flip["refine"]["admitted"]  # the winner's segments alone
    for name in sets[:2]:
        assert (d / "train" / "iter_0002" / name / "metrics.jsonl").is_file()
    for r in range(1, rounds):
        assert (d / "train" / "iter_0002" / f"redraw_{r}" / "search" / "metrics.jsonl").is_file()
    assert any((d / "tensorboard").iterdir())
    assert (d / ".hydra" / "config.yaml").is_file()  # the resolved config


def test_a_sigkilled_run_resumes_to_the_same_library_and_metrics(uninterrupted, tmp_path):
    run_dir = tmp_path / "run"
    # Kill it in iteration 2 as soon as its segments are stored (after the example sets' clones
    # competed), so the resume must roll the library back.
    kill_when(command(run_dir), run_dir / "library" / "flip.hdf5")
    assert json.loads((run_dir / "state.json").read_text())["iteration"] == 1
    assert SkillLibrary(run_dir / "library").count("flip") > 0  # the interrupted iteration's segments
    # Resumed the way a user continues a tree: the run's own config, rebuilt from its .hydra folder.
    resumed = subprocess.run(
        [sys.executable, "-m", "robo_coevolve.cli.tree", "continue", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout + resumed.stderr
    assert metrics(run_dir) == metrics(uninterrupted)
    assert library_content(run_dir) == library_content(uninterrupted)
    for skill in ("scoop", "flip"):  # the rollback restores bytes, not only content
        path = f"library/{skill}.hdf5"
        assert (run_dir / path).read_bytes() == (uninterrupted / path).read_bytes(), skill
    a = VLAPolicy.from_pretrained(run_dir / "checkpoints" / "iter_0002").state_dict()
    b = VLAPolicy.from_pretrained(uninterrupted / "checkpoints" / "iter_0002").state_dict()
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)


def cli(verb: str, *args: str) -> subprocess.CompletedProcess:
    """``python -m robo_coevolve.cli.<verb> ARGS`` (what ``robo-coevolve-<verb>`` runs), which must
    succeed."""
    command = [sys.executable, "-m", f"robo_coevolve.cli.{verb}", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_scripts_show_evaluate_plot_and_render_a_run(uninterrupted, tmp_path):
    d = str(uninterrupted)
    status = cli("tree", "status", d).stdout
    assert "2 iteration(s)" in status and "mastered" in status and "active" in status
    assert "library (every file checked): {'scoop': " in status
    assert f"library digest: {SkillLibrary(uninterrupted / 'library').digest()}" in status
    cli("tree", "evaluate", d, "--tasks", "4")
    evaluation = json.loads((uninterrupted / "evaluation.json").read_text())
    assert set(evaluation["nodes"]) == {"scoop", "flip", "catch", "toss", "serve", "serve_turned", "season"}
    assert all(e["n"] == 4 for e in evaluation["nodes"].values())
    assert "recipe cook (scoop -> flip): " in status
    out = cli(
        "tree", "evaluate", d, "--suite", "recipes", "--tasks", "2", "--json", str(tmp_path / "r.json")
    ).stdout
    cook = json.loads((tmp_path / "r.json").read_text())["cook"]
    assert cook["n"] == 2 and "recipe cook (scoop -> flip): " in out
    assert cook["product"] == json.loads((uninterrupted / "recipes" / "cook.json").read_text())["product"]
    cli("plot", d, "--out", str(tmp_path))
    assert (tmp_path / "progress.png").stat().st_size > 1000 and (tmp_path / "skill_tree.png").is_file()
    out = cli(
        "render",
        "policy",
        f"{d}/checkpoints/iter_0001",
        "--skill",
        "scoop",
        "--episodes",
        "1",
        "--size",
        "96",
        "72",
        "--frame-every",
        "10",
        "--out",
        str(tmp_path / "videos"),
    ).stdout
    assert "scoop_0.mp4" in out and (tmp_path / "videos" / "scoop_0.mp4").stat().st_size > 1000


# The last stage at a token size: a few labelled segments and episodes, 20 training steps.
DISTIL = [
    "distill=image",
    "distill.segments=4",
    "distill.teacher_rollouts=2",
    "distill.start_states=2",
    "distill.dagger_rounds=1",
    "distill.dagger_rollouts=1",
    "distill.train.steps=20",
    "distill.train.batch_size=32",
    "distill.eval_tasks=2",
]


def test_the_last_stage_distils_the_runs_policy_into_the_image_policy(uninterrupted, tmp_path):
    """``distill=image`` on a finished run: the loop has nothing left to do, and its policy is
    distilled into the camera policy on every node it evaluated; run again, it is not redone,
    unless its settings changed."""
    run_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, run_dir)
    proc = run(run_dir, *DISTIL)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report_file = run_dir / "distilled" / "report.json"
    report = json.loads(report_file.read_text())
    assert report["skills"] == ["scoop", "flip"] and report["teacher_checkpoint"] == "checkpoints/iter_0002"
    assert report["eval_tasks"] == {"scoop": 2, "flip": 2} and report["bars"]["flip"] == 0.5
    assert [set(r.get("student_rollout_success", {})) for r in report["rounds"]] == [{"scoop", "flip"}, set()]
    assert report["teacher_rollouts"]["episodes"] == 4
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["distilled"]["student"] == report["student"]["success"]
    assert summary["distilled"]["holds"] == report["holds"]
    assert "distilled into the student" in proc.stdout
    student = VLAPolicy.from_pretrained(run_dir / "distilled" / "student").config
    assert student.use_image and not student.use_egg_state and student.control_hz == 50.0
    assert metrics(run_dir) == metrics(uninterrupted)  # no iteration ran
    assert not list(run_dir.glob(".distilled*"))  # nothing left aside
    written = report_file.stat().st_mtime_ns
    again = run(run_dir, *DISTIL, "distill.train.threads=1")
    assert again.returncode == 0 and "already distilled" in again.stdout + again.stderr
    assert report_file.stat().st_mtime_ns == written
    other = run(run_dir, *DISTIL, "distill.start_states=3")
    assert other.returncode == 0 and "already distilled" not in other.stdout + other.stderr
    redone = json.loads(report_file.read_text())
    assert redone["start_samples"] == 6 and redone["settings"]["start_states"] == 3
    assert redone["settings"] == {**report["settings"], "start_states": 3}


def test_the_distill_script_reads_a_run(uninterrupted, tmp_path):
    """robo-coevolve-distill on a run directory: its latest checkpoint, library and nodes (the
    default student: small and state-only)."""
    out = tmp_path / "student"
    tiny = ["--segments", "4", "--rollouts", "2", "--rounds", "0", "--steps", "20", "--batch", "32"]
    table = cli("distill", str(uninterrupted), "--out", str(out), *tiny, "--eval", "2").stdout
    report = json.loads((out / "report.json").read_text())
    assert report["skills"] == ["scoop", "flip"] and set(report["student"]["success"]) == {"scoop", "flip"}
    assert report["teacher"]["checkpoint"].endswith("checkpoints/iter_0002")
    assert "| scoop |" in table and "| flip |" in table
    assert VLAPolicy.from_pretrained(out / "student").config.hidden == 128
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "robo_coevolve.cli.distill",
            str(uninterrupted),
            "--skill",
            "flop",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "has no node ['flop']" in bad.stderr


def test_resuming_with_another_config_is_refused(uninterrupted, tmp_path):
    proc = run(uninterrupted, "train.fit.lr=0.01")
    assert proc.returncode != 0
    assert "another config" in proc.stderr and "train.fit.lr" in proc.stderr


def compose(*overrides: str):
    from robo_coevolve.configs import compose

    return compose(*TINY, *overrides)


@pytest.mark.parametrize(
    "override, words",
    [
        ("skill_tree.nodes.flip.requires=[flop]", ["skill_tree", "unknown node", "flop"]),
        ("policy.chunk=0", ["policy", "chunk"]),
        ("train.fit.lr=-1", ["train", "lr"]),
        ("explore.schedule.grip=2", ["explore.schedule", "grip"]),
        ("explore.demos=-1", ["explore", "demos=-1 must be >= 0"]),
        ("budget.until=[juggle]", ["budget.until", "juggle"]),
        ("budget.iterations=0", ["budget", "iterations"]),
        ("budget.past_mastery=true", ["budget", "past_mastery", "until"]),
        ("refine.min_integrity=3", ["refine", "min_integrity"]),
    ],
)
def test_an_invalid_override_names_the_problem_when_the_job_is_built(tmp_path, override, words):
    from robo_coevolve.workspace.evolve import ConfigError, EvolveWorkspace

    with pytest.raises(ConfigError) as e:
        EvolveWorkspace(compose(override), tmp_path / "run")
    for w in words:
        assert w in str(e.value)


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["distill.dagger_rounds=-1"], ["distill", "dagger_rounds=-1 must be >= 0"]),
        (["distill.start_states=-1"], ["distill", "start_states=-1 must be >= 0"]),
        (["distill.student.image_size=8"], ["distill", "image_size must be >= 16"]),
        (["policy.chunk=4", "policy.execute=2"], ["distill", "chunk=8 differs from the teacher's 4"]),
    ],
)
def test_an_invalid_distillation_names_the_problem_when_the_job_is_built(tmp_path, overrides, words):
    from robo_coevolve.workspace.evolve import ConfigError, EvolveWorkspace

    with pytest.raises(ConfigError) as e:
        EvolveWorkspace(compose("distill=image", *overrides), tmp_path / "run")
    for w in words:
        assert w in str(e.value)


def test_the_command_line_fails_on_a_bad_override_before_any_work(tmp_path):
    start = time.monotonic()
    proc = run(tmp_path / "run", "policy.chunk=0")
    assert proc.returncode != 0
    assert "PolicyConfig.chunk must be >= 1" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "run" / "library").exists() and not (tmp_path / "run" / "state.json").exists()
    assert time.monotonic() - start < 60
