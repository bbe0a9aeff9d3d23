"""The main job as users run it: ``python -m robo_coevolve`` (a Hydra app)."""

import json
import subprocess
import sys


def run_main(tmp_path, *overrides):
    return subprocess.run(
        [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={tmp_path}", *overrides],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_main_job_scores_and_renders_the_scripted_motions(tmp_path):
    proc = run_main(tmp_path, "workspace.skills=[scoop,flip]", "env.render_size=[160,120]")
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert [(m["skill"], m["success"]) for m in metrics] == [("scoop", True), ("flip", True)]
    for skill in ("scoop", "flip"):
        assert (tmp_path / f"{skill}_0.mp4").stat().st_size > 1000
        assert (tmp_path / f"{skill}_0.npz").is_file()
    assert (tmp_path / ".hydra" / "config.yaml").is_file()  # the resolved config is kept
    assert "scoop     0  True" in proc.stdout


def test_invalid_override_fails_before_any_work(tmp_path):
    proc = run_main(tmp_path, "workspace.skills=[juggle]")
    assert proc.returncode != 0
    assert "workspace.skills has ['juggle']" in proc.stderr
    proc = run_main(tmp_path, "env.control_hz=33")
    assert proc.returncode != 0
    assert "control_hz=33" in proc.stderr
    assert not list(tmp_path.glob("*.npz"))
