"""Make the README's animated strip: each skill's best evaluation episode of a run, one after another.

    python scripts/make_strip.py RUN_DIR [--out docs/assets/strip.gif]

For every node with a video in ``RUN_DIR/videos/`` it takes the latest iteration's
``iter<k>_<node>_best.mp4``, keeps a short window of it, shrinks it and writes the node's name
on the frames, then joins the nodes in the order the run reached them into one looping GIF.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import imageio.v3 as iio
import numpy as np
from PIL import Image, ImageDraw, ImageFont

BEST_VIDEO = re.compile(r"iter(\d+)_(.+)_best\.mp4")


def best_videos(run_dir: Path) -> list[tuple[str, Path]]:
    """Each node's best evaluation video from its latest iteration, as (node, path), in the order
    the run first filmed the nodes (the skill tree's order)."""
    found: dict[str, list[tuple[int, Path]]] = {}
    for path in sorted((run_dir / "videos").glob("iter*_*_best.mp4")):
        match = BEST_VIDEO.fullmatch(path.name)
        if match:
            found.setdefault(match.group(2), []).append((int(match.group(1)), path))
    first_filmed = sorted(found, key=lambda node: min(it for it, _ in found[node]))
    return [(node, max(found[node])[1]) for node in first_filmed]


def clip_frames(
    path: Path, label: str, start: float, seconds: float, fps: float, width: int
) -> list[Image.Image]:
    """The video's frames from ``start`` for ``seconds`` (s), resampled to ``fps`` and
    ``width`` pixels wide, with ``label`` written in the lower left corner."""
    source_fps = float(iio.immeta(path).get("fps") or 25.0)
    frames = iio.imread(path)
    times = np.arange(start, start + seconds, 1.0 / fps)
    indices = sorted({int(round(t * source_fps)) for t in times if round(t * source_fps) < len(frames)})
    height = round(frames.shape[1] * width / frames.shape[2])
    font = ImageFont.load_default(size=max(12, width // 12))
    out = []
    for index in indices:
        image = Image.fromarray(frames[index]).resize((width, height), Image.Resampling.LANCZOS)
        draw = ImageDraw.Draw(image)
        margin = width // 40
        draw.text((margin, height - margin), label, font=font, anchor="ld", fill="white",
                  stroke_width=2, stroke_fill="black")  # fmt: skip
        out.append(image)
    return out


def write_gif(frames: list[Image.Image], out: Path, fps: float) -> None:
    """One looping GIF; the palette is shared by all frames so that it stays small."""
    palette = frames[len(frames) // 2].quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    paletted = [frame.quantize(palette=palette, dither=Image.Dither.NONE) for frame in frames]
    out.parent.mkdir(parents=True, exist_ok=True)
    paletted[0].save(
        out, save_all=True, append_images=paletted[1:], duration=round(1000 / fps), loop=0, optimize=True
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a finished run of `python -m robo_coevolve`")
    parser.add_argument("--out", type=Path, default=Path("docs/assets/strip.gif"))
    parser.add_argument("--start", type=float, default=0.0, help="s into each video where its window starts")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each node's window, s")
    parser.add_argument("--fps", type=float, default=10.0, help="frames per second of the GIF")
    parser.add_argument("--width", type=int, default=240, help="width of the GIF, pixels")
    args = parser.parse_args(argv)

    videos = best_videos(args.run_dir)
    if not videos:
        sys.exit(
            f"make_strip: no iter<k>_<node>_best.mp4 in {args.run_dir / 'videos'}: pass the folder of a "
            "finished run made with videos on (workspace.video.every >= 1)"
        )
    frames = []
    for node, path in videos:
        frames += clip_frames(path, node, args.start, args.seconds, args.fps, args.width)
    if not frames:
        sys.exit(f"make_strip: --start {args.start} s is past the end of every video: use a smaller one")
    write_gif(frames, args.out, args.fps)
    size_mb = args.out.stat().st_size / 1e6
    print(f"{args.out}: {', '.join(node for node, _ in videos)}; {len(frames)} frames, {size_mb:.2f} MB")


if __name__ == "__main__":
    main()
