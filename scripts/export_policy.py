"""Export a policy checkpoint to ONNX, check it against torch and time both on this CPU.

    python scripts/export_policy.py CHECKPOINT_DIR [--output policy.onnx] [--batch 1 16] [--atol 1e-4]

CHECKPOINT_DIR is what ``VLAPolicy.save_pretrained`` wrote. The graph takes the raw observations
and the instruction's embedding (see ``robo_coevolve.policy.export``); the parity check runs it
through onnxruntime on synthetic observations of each batch size and fails (exit 1) when any
action differs from ``predict_chunk``'s by more than ``--atol``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.policy import PolicyConfigError, VLAPolicy
from robo_coevolve.policy.export import (
    ExportError,
    check_parity,
    example_observation,
    export_onnx,
    latency,
    onnx_session,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="directory written by VLAPolicy.save_pretrained")
    parser.add_argument("--output", type=Path, help="ONNX file (default: CHECKPOINT_DIR/policy.onnx)")
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 16], help="batch sizes to check and time")
    parser.add_argument("--atol", type=float, default=1e-4, help="largest allowed action difference")
    parser.add_argument("--repeats", type=int, default=200, help="timed calls per figure")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch and onnxruntime")
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic observations")
    args = parser.parse_args(argv)

    try:
        policy = VLAPolicy.from_pretrained(args.checkpoint)
    except PolicyConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
