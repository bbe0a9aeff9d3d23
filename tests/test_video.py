"""Trial videos: real mp4 files whose frames show the motion and the score overlay."""

import imageio.v2 as imageio
import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.trajectory import run_motion
from robo_coevolve.video import main, render_trial


def test_render_trial_writes_a_video_of_the_motion(tmp_path):
    env = EggFlipEnv(skill="flip")
    traj = run_motion(env, scripted.flip, seed=0)
    path = render_trial(
        traj, tmp_path / "flip.mp4", camera="side", size=(160, 120), frame_every=5, tail_s=0.4
    )
    frames = np.array([f for f in imageio.get_reader(path)])  # len() of the reader is inf
    fps = traj.control_hz / 5
    assert len(frames) == 1 + len(traj) // 5 + int(0.4 * fps)
    assert frames.shape[1:] == (120, 160, 3)
    body = frames[:, 40:, :, :].astype(float)  # below the overlay box
    assert np.abs(body[0] - body[len(traj) // 10]).mean() > 1.0  # the scene moved
    box, rest = frames[5, :10, :40].mean(), frames[5, 60:, :40].mean()
    assert box < rest  # the dark overlay box is there
    assert not list(tmp_path.glob("*.part*"))


def test_cli_renders_a_saved_trial(tmp_path, capsys):
    env = EggFlipEnv(skill="scoop")
    traj = run_motion(env, scripted.scoop, seed=0)
    saved = traj.save(tmp_path / "scoop.npz")
    main([str(saved), "--size", "96", "64", "--frame-every", "10"])
    assert (tmp_path / "scoop.mp4").stat().st_size > 1000
    assert "scoop: success" in capsys.readouterr().out
