"""scripts/make_strip.py: one small looping GIF from each node's latest best evaluation video."""

import subprocess
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
from PIL import Image

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_strip.py"


def write_video(path: Path, shade: int, seconds: float = 2.0, fps: int = 25) -> None:
    frames = np.full((int(seconds * fps), 360, 480, 3), shade, dtype=np.uint8)
    for index, frame in enumerate(frames):
        frame[-16:, : 8 * (index + 1)] = 255 - shade  # a growing bar: no two frames alike
    iio.imwrite(path, frames, fps=fps, codec="libx264", macro_block_size=1)


def test_strip_takes_each_nodes_latest_best_video_in_tree_order(tmp_path):
    videos = tmp_path / "run" / "videos"
    videos.mkdir(parents=True)
    write_video(videos / "iter001_scoop_best.mp4", 40)
    write_video(videos / "iter002_flip_best.mp4", 250)  # superseded by iteration 3
    write_video(videos / "iter003_flip_best.mp4", 140)
    write_video(videos / "iter003_flip_failure.mp4", 250)
    out = tmp_path / "strip.gif"

    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "run"), "--out", str(out), "--seconds", "1.0"],
        capture_output=True,
        text=True,
        check=True,
    )

    assert "scoop, flip" in result.stdout
    gif = Image.open(out)
    assert gif.size == (240, 180)
    assert gif.n_frames == 20  # 1 s at 10 frames/s per node
    assert gif.info["loop"] == 0
    assert out.stat().st_size < 1.5e6
    shades = []
    for index in (0, 19):
        gif.seek(index)
        shades.append(float(np.asarray(gif.convert("L"))[:60].mean()))  # above the label
    assert shades[0] == np.clip(shades[0], 25, 55)  # scoop's dark clip first
    assert shades[1] == np.clip(shades[1], 125, 155)  # then flip's latest, not iteration 2's


def test_a_run_without_videos_is_one_line_naming_the_fix(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "no iter<k>_<node>_best.mp4" in result.stderr
