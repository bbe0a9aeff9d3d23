"""Trial videos: real mp4 files whose frames show the motion and the score overlay."""

import imageio.v2 as imageio
import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.trajectory import run_motion
from robo_coevolve.video import pick_highlights, render_highlights, render_trial


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


def test_highlights_are_the_best_success_and_a_typical_failure(tmp_path):
    env = EggFlipEnv(skill="scoop")
    good = run_motion(env, scripted.scoop, seed=0)
    missed = [run_motion(env, lambda o, d=d: scripted.scoop(o, miss_by=d), seed=0) for d in (0.08, 0.09, 0.1)]
    env.close()
    assert good.success and not any(t.success for t in missed)
    picks = pick_highlights([missed[0], good, *missed[1:]])
    assert picks["best"] is good
    assert any(picks["failure"] is t for t in missed)
    paths = render_highlights([good, *missed], tmp_path, prefix="scoop_", size=(96, 64), frame_every=10)
    assert sorted(p.name for p in paths.values()) == ["scoop_best.mp4", "scoop_failure.mp4"]
    assert all(p.stat().st_size > 1000 for p in paths.values())
    assert list(pick_highlights([good])) == ["best"]
    assert pick_highlights([]) == {}
