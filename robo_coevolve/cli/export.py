"""Export a skill library for imitation-learning frameworks, or a policy checkpoint to ONNX.

examples:
  robo-coevolve-export library RUN/library --robomimic scoop_flip.hdf5     # one file, train/valid masks
  robo-coevolve-export library RUN/library --lerobot lerobot_ds/ --skills scoop flip
  robo-coevolve-export policy RUN/checkpoints/iter_0004 --batch 1 16       # writes .../policy.onnx

library writes robomimic HDF5 and/or a LeRobot v3.0 dataset (see robo_coevolve.library.robomimic
and .lerobot). policy writes the ONNX graph (raw observations and the instruction's embedding in,
see robo_coevolve.policy.export), runs it through onnxruntime on synthetic observations of each
batch size, fails (exit 1) when any action differs from predict_chunk's by more than --atol, and
prints a latency table of torch against onnxruntime on this CPU.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import checkpoint
from robo_coevolve.task_spec import SKILLS


def export_library(args) -> int:
    from robo_coevolve.library import SkillLibrary
    from robo_coevolve.library.lerobot import export_lerobot
    from robo_coevolve.library.robomimic import export_robomimic

    if args.robomimic is None and args.lerobot is None:
        raise UsageError("nothing to do: give --robomimic OUT.hdf5 and/or --lerobot OUT_DIR")
    if not args.library.is_dir():
        what = "is not a directory" if args.library.exists() else "does not exist"
        raise UsageError(f"skill library {args.library} {what}: give a library directory, e.g. RUN/library")
    library = SkillLibrary(args.library, create=False)
    try:
        counts = {s: library.count(s) for s in args.skills or library.skills()}
        n, names = sum(counts.values()), ", ".join(counts)
        if args.lerobot is not None:
            try:
                path = export_lerobot(
                    library, args.lerobot, args.skills, args.image_size, args.fps, args.overwrite
                )
            except FileExistsError:
                raise UsageError(
                    f"{args.lerobot} exists and is not empty: pick a new directory or pass --overwrite"
                ) from None
            print(f"lerobot: {path} ({n} episodes of {names})")
        if args.robomimic is not None:
            path = export_robomimic(library, args.robomimic, args.skills, args.valid_fraction, args.seed)
            print(f"robomimic: {path} ({n} demos of {names})")
    except ValueError as e:  # no segments of a chosen skill, a share out of range
        raise UsageError(str(e)) from None
    return 0


def export_policy(args) -> int:
    import numpy as np
    import torch

    from robo_coevolve.policy import VLAPolicy
    from robo_coevolve.policy.export import (
        ExportError,
        check_parity,
        example_observation,
        export_onnx,
        latency,
        onnx_session,
    )

    policy = VLAPolicy.from_pretrained(args.checkpoint)
    torch.set_num_threads(args.threads)
    output = args.output or args.checkpoint / "policy.onnx"
    try:
        export_onnx(policy, output)
    except ExportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    session = onnx_session(output, threads=args.threads)
    rng = np.random.default_rng(args.seed)
    print(f"wrote {output} ({output.stat().st_size / 1e6:.2f} MB)")
    print(f"CPU, {args.threads} thread(s); latency = median seconds per forward pass (one action chunk)")
    print("| batch | max abs(onnx - torch) | torch predict_chunk | onnxruntime | speed-up |")
    print("|--:|--:|--:|--:|--:|")
    failed = False
    for batch in args.batch:
        obs = example_observation(policy, batch, rng)
        try:
            error = check_parity(policy, session, obs, args.atol)
        except ExportError as e:
            print(f"error at batch {batch}: {e}", file=sys.stderr)
            failed = True
            continue
        t = latency(policy, session, obs, args.repeats)
        print(
            f"| {batch} | {error:.1e} | {t['torch_s'] * 1e3:.3f} ms | {t['onnxruntime_s'] * 1e3:.3f} ms | "
            f"{t['torch_s'] / t['onnxruntime_s']:.1f}x |"
        )
    return 1 if failed else 0


@command
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="robo-coevolve-export", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("library", help="a skill library to robomimic HDF5 and/or LeRobot v3.0")
    p.add_argument("library", type=Path, help="skill library directory (one <skill>.hdf5 per skill)")
    p.add_argument("--robomimic", type=Path, metavar="OUT.hdf5", help="write one robomimic HDF5 file")
    p.add_argument("--lerobot", type=Path, metavar="OUT_DIR", help="write a LeRobot v3.0 dataset directory")
    p.add_argument("--skills", nargs="+", choices=SKILLS, help="skills to export (default: all present)")
    p.add_argument("--image-size", type=int, default=64, help="LeRobot policy-camera frame side, pixels")
    p.add_argument("--fps", type=float, help="LeRobot frame rate (default: the segments' control rate)")
    p.add_argument("--valid-fraction", type=float, default=0.1, help="robomimic mask/valid share")
    p.add_argument("--seed", type=int, default=0, help="seed of the robomimic train/valid split")
    p.add_argument("--overwrite", action="store_true", help="replace an existing LeRobot directory")
    p.set_defaults(run=export_library)

    p = sub.add_parser("policy", help="a policy checkpoint to ONNX, checked against torch and timed")
    p.add_argument("checkpoint", type=checkpoint, help="directory written by VLAPolicy.save_pretrained")
    p.add_argument("--output", type=Path, help="ONNX file (default: CHECKPOINT/policy.onnx)")
    p.add_argument("--batch", nargs="+", type=int, default=[1, 16], help="batch sizes to check and time")
    p.add_argument("--atol", type=float, default=1e-4, help="largest allowed action difference")
    p.add_argument("--repeats", type=int, default=200, help="timed calls per figure")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for torch and onnxruntime")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic observations")
    p.set_defaults(run=export_policy)

    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
