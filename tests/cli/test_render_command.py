"""``robo-coevolve-render trial``: a saved trial to an mp4 beside it."""

from robo_coevolve.cli.render import main
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.trajectory import run_motion


def test_a_saved_trial_renders_beside_itself(tmp_path, capsys):
    env = EggFlipEnv(skill="scoop")
    traj = run_motion(env, scripted.scoop, seed=0)
    env.close()
    saved = traj.save(tmp_path / "scoop.npz")
    assert main(["trial", str(saved), "--size", "96", "64", "--frame-every", "10"]) == 0
    assert (tmp_path / "scoop.mp4").stat().st_size > 1000
    assert capsys.readouterr().out == f"{tmp_path / 'scoop.mp4'}  (scoop: success)\n"


def test_a_missing_trial_is_one_line(tmp_path, capsys):
    assert main(["trial", str(tmp_path / "none.npz")]) == 2
    missing = tmp_path / "none.npz"
    err = capsys.readouterr().err
    assert err == f"error: trial {missing} does not exist: give a .npz written by Trajectory.save\n"
