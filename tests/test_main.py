"""The main job as users run it: ``python -m robo_coevolve`` (a Hydra app)."""

import json
import subprocess
import sys

from robo_coevolve.explore import primitives
from robo_coevolve.library import SkillLibrary
from robo_coevolve.trajectory import Trajectory


def run_main(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={tmp_path}", *overrides],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_main_job_searches_primitives_and_renders_the_best_and_a_failure(tmp_path):
    proc = run_main(
        tmp_path,
        "workspace=explore",
        "workspace.skills=[scoop]",
        "explore.budget=240",
        "explore.population=40",
        "explore.select_trials=10",
        "explore.demos=30",
        "explore.demo_bar=0",
        "explore.polish=null",
        "explore.eval_tasks=20",
        "explore.noise_baseline.trials=20",
        "env.render_size=[160,120]",
        "workspace.frame_every=10",
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())["scoop"]
    # 210 searched, 10 per mode to pick the answer (10 more for those near the best), 30
    # demonstrations of it
    assert 240 < summary["trials"] <= 300 and summary["held_out_tasks"] == 20
    assert summary["held_out_success"] > summary["noise_baseline"]  # search beats random noise
    generations = [
        json.loads(line) for line in (tmp_path / "scoop" / "generations.jsonl").read_text().splitlines()
    ]
    assert [g["trials"] for g in generations] == [40, 80, 120, 160, 200, 210]  # 3 modes x 10 pick the answer
    assert set(summary["best_params"]) == set(primitives.NAMES)
    for name in ("best", "failure"):
        assert (tmp_path / "videos" / f"scoop_{name}.mp4").stat().st_size > 1000
        assert Trajectory.load(tmp_path / "scoop" / f"{name}.npz").task.skill == "scoop"
    assert "scoop" in proc.stdout and "held-out" in proc.stdout
    # The answer's successful demonstrations were refined into the run's skill library.
    refine = summary["refine"]
    assert refine["trials"] == refine["successes"] == round(30 * summary["demo_success"]) >= 1
    assert refine["successes"] >= refine["survived"] >= refine["admitted"] >= 1
    library = SkillLibrary(tmp_path / "library")
    assert library.count("scoop") == summary["library_segments"] == refine["admitted"]
    assert all(s.success for s in library.segments("scoop"))


def test_scripted_demo_scores_and_renders_the_hand_written_motions(tmp_path):
    proc = run_main(
        tmp_path, "workspace=scripted_demo", "workspace.skills=[scoop,flip]", "env.render_size=[160,120]"
    )
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert [(m["skill"], m["success"]) for m in metrics] == [("scoop", True), ("flip", True)]
    for skill in ("scoop", "flip"):
        assert (tmp_path / f"{skill}_0.mp4").stat().st_size > 1000
        assert (tmp_path / f"{skill}_0.npz").is_file()
    assert (tmp_path / ".hydra" / "config.yaml").is_file()  # the resolved config is kept
    assert "scoop     0  True" in proc.stdout


BAD_OVERRIDES = [
    (("workspace=explore", "workspace.skills=[juggle]"), "workspace.skills has ['juggle']"),
    (("workspace=scripted_demo", "workspace.skills=[juggle]"), "workspace.skills has ['juggle']"),
    (("workspace=explore", "explore.tasks.egg_mass_range=1.5"), "egg_mass_range=1.5"),
    (("workspace=explore", "explore.budget=0"), "explore.budget=0 must be >= 1"),
    (("workspace=explore", "explore.demos=-5"), "explore.demos=-5 must be >= 0"),
    (("workspace=explore", "refine.min_integrity=3"), "min_integrity=3"),
    (("workspace=explore", "env.control_hz=33"), "control_hz=33"),
    (("seed=x",), "seed=x: Value 'x' of type 'str' could not be converted to Integer"),
    (("seed=1.5",), "seed=1.5: Value '1.5' of type 'float' could not be converted to Integer"),
    (("seed=-1",), "seed=-1: the run's seed must be an integer >= 0"),
    (("budget.iterations=abc",), "budget.iterations=abc: Value 'abc'"),
    (("budget.iterations=0",), "budget.iterations=0 must be >= 1"),
    (("train.redraws=-1",), "train.redraws=-1 must be >= 0"),
    (("explore.polish.trails=10",), "Key 'trails' not in"),
    (("policy=nope",), "Could not find 'policy/nope'"),
]


def test_invalid_override_is_one_line_before_any_work(tmp_path):
    """Every refused override ends the job with exit code 2 and one line on stderr naming it."""
    for overrides, message in BAD_OVERRIDES:
        proc = run_main(tmp_path, *overrides)
        assert proc.returncode == 2, (overrides, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (overrides, lines)
    assert not list(tmp_path.glob("*.npz")) and not (tmp_path / "library").exists()


def test_a_damaged_library_is_one_line_on_resume(tmp_path):
    """Resuming in a run folder whose library file was cut short names the file and the fix."""
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "scoop.hdf5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(200))
    proc = run_main(tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert "scoop.hdf5 is not a readable skill library" in lines[0] and "delete it" in lines[0]
