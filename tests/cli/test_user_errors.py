"""Each command refuses bad input with one line on stderr naming the problem and the fix (exit 2),
never a traceback."""

import shutil

from cli_runner import refused, run_cli


def cut_in_half(path):
    """Truncate the file at ``path`` to half its length (what a crashed copy leaves)."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_a_missing_run_directory(tmp_path):
    line = refused(run_cli("tree", "status", tmp_path / "nowhere"))
    assert f"run directory {tmp_path / 'nowhere'} does not exist" in line and "hydra.run.dir" in line


def test_a_directory_that_is_not_a_run(tmp_path):
    line = refused(run_cli("plot", tmp_path))
    assert f"{tmp_path} is not a robo-coevolve run directory (no .hydra/overrides.yaml)" in line
    assert "give the hydra.run.dir of a robo-coevolve run" in line


def test_plotting_a_run_before_its_first_iteration(new_run):
    line = refused(run_cli("plot", new_run))
    assert "has no state.json" in line and "plot it after the first" in line


def test_status_checks_every_skill_file(new_run, skill_file):
    shutil.copytree(skill_file.parent, new_run / "library")
    healthy = run_cli("tree", "status", new_run)
    assert healthy.returncode == 0 and "no completed iteration yet" in healthy.stdout, healthy.stderr
    cut_in_half(new_run / "library" / "scoop.hdf5")
    line = refused(run_cli("tree", "status", new_run))
    assert f"{new_run / 'library' / 'scoop.hdf5'} is not a readable skill library" in line
    assert "restore it from a backup or delete it" in line


def test_continue_on_a_damaged_library_does_not_start(new_run, skill_file):
    shutil.copytree(skill_file.parent, new_run / "library")
    cut_in_half(new_run / "library" / "scoop.hdf5")
    line = refused(run_cli("tree", "continue", new_run))
    assert "scoop.hdf5 is not a readable skill library" in line and "delete it" in line
    assert not (new_run / "state.json").exists()


def test_evaluating_a_run_without_a_checkpoint(new_run):
    line = refused(run_cli("tree", "evaluate", new_run))
    assert line == f"error: {new_run} has no policy checkpoint yet: give --checkpoint DIR"


def test_a_missing_checkpoint(tmp_path):
    for verb, args in [
        ("render", ["policy", tmp_path / "ckpt", "--skill", "flip"]),
        ("export", ["policy", tmp_path / "ckpt"]),
    ]:
        line = refused(run_cli(verb, *args))
        assert f"policy checkpoint {tmp_path / 'ckpt'} does not exist" in line
        assert "give a directory VLAPolicy.save_pretrained wrote" in line


def test_an_instruction_the_task_spec_refuses(checkpoint, tmp_path):
    proc = run_cli(
        "render", "policy", checkpoint, "--skill", "scoop", "--instruction", "égg flip ✓", "--out", tmp_path
    )
    line = refused(proc)
    assert "instruction" in line and "'é'" in line and "✓" in line
    assert not list(tmp_path.iterdir())


def test_a_skill_the_command_does_not_know(checkpoint):
    line = refused(run_cli("render", "policy", checkpoint, "--skill", "flop"))
    assert "invalid choice: 'flop'" in line and "'scoop'" in line


def test_distilling_from_nothing(tmp_path):
    line = refused(run_cli("distill", tmp_path / "teacher", "--out", tmp_path / "out"))
    assert "teacher" in line and "does not exist: give a policy checkpoint or a run directory" in line
    assert not (tmp_path / "out").exists()
