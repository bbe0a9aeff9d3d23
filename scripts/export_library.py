"""Export a skill library for imitation-learning frameworks.

    python scripts/export_library.py LIBRARY_DIR --robomimic out.hdf5
    python scripts/export_library.py LIBRARY_DIR --lerobot OUT_DIR [--image-size 64] [--skills scoop flip]

Both can be given at once. See ``robo_coevolve.library.robomimic`` and ``.lerobot`` for the formats.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robo_coevolve.library import LibraryError, SkillLibrary
from robo_coevolve.library.lerobot import export_lerobot
from robo_coevolve.library.robomimic import export_robomimic
from robo_coevolve.task_spec import SKILLS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Export a skill library to robomimic HDF5 and/or LeRobot v3.0."
    )
    parser.add_argument("library", type=Path, help="skill library directory (one <skill>.hdf5 per skill)")
    parser.add_argument("--robomimic", type=Path, metavar="OUT.hdf5", help="write one robomimic HDF5 file")
    parser.add_argument(
        "--lerobot", type=Path, metavar="OUT_DIR", help="write a LeRobot v3.0 dataset directory"
    )
    parser.add_argument("--skills", nargs="+", choices=SKILLS, help="skills to export (default: all present)")
    parser.add_argument("--image-size", type=int, default=64, help="LeRobot policy-camera frame side, pixels")
    parser.add_argument("--fps", type=float, help="LeRobot frame rate (default: the segments' control rate)")
    parser.add_argument("--valid-fraction", type=float, default=0.1, help="robomimic mask/valid share")
    parser.add_argument("--seed", type=int, default=0, help="seed of the robomimic train/valid split")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing LeRobot directory")
    args = parser.parse_args(argv)
    if args.robomimic is None and args.lerobot is None:
        parser.error("nothing to do: give --robomimic OUT.hdf5 and/or --lerobot OUT_DIR")
    if not args.library.is_dir():
        what = "is not a directory" if args.library.exists() else "does not exist"
        print(f"error: skill library {args.library} {what}", file=sys.stderr)
        return 2
    try:
        library = SkillLibrary(args.library, create=False)
        counts = {s: library.count(s) for s in args.skills or library.skills()}
        if args.robomimic is not None:
            path = export_robomimic(library, args.robomimic, args.skills, args.valid_fraction, args.seed)
            print(f"robomimic: {path} ({sum(counts.values())} demos of {', '.join(counts)})")
        if args.lerobot is not None:
            path = export_lerobot(
                library, args.lerobot, args.skills, args.image_size, args.fps, args.overwrite
            )
            print(f"lerobot: {path} ({sum(counts.values())} episodes of {', '.join(counts)})")
    except (LibraryError, ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
