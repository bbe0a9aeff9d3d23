"""The evolution loop against its two baselines, on the same held-out tasks, from one run.

    python -m robo_coevolve budget=full hydra.run.dir=runs/full     # the run (state-only policy)
    python benchmarks/evolve_report.py runs/full [--tasks 200]

For every node the run reached, on ``--tasks`` held-out tasks of the node's distribution (drawn
from a seed neither the loop's exploration nor its own evaluations used):

- **primitives alone**: the node's motion-primitive search answer (best mode, open loop, no
  learned policy), i.e. the explorer without the rest of the loop;
- **BC once**: the policy as trained at the node's first iteration, on that iteration's successes
  only (static data, no policy-driven rounds);
- **co-evolution**: the run's final policy (after every later round, rehearsal included).

All three run on the same tasks, so the margin (co-evolution minus the better baseline) is a
paired difference: it is printed with its 95% interval (normal approximation over the tasks'
paired outcomes) and the tasks only one of the two solved. A margin whose interval holds 0 is
not a difference these tasks can show.

Also prints the run's curve (policy success per iteration), trials and wall time per node until
mastery, from ``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from robo_coevolve.evolve.run_state import RunState, checkpoint_name  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.search import evaluate_params  # noqa: E402
from robo_coevolve.learn import evaluate_policy  # noqa: E402
from robo_coevolve.policy import VLAPolicy  # noqa: E402

HELD_OUT_SEED = 777_777


def outcomes(trajs) -> np.ndarray:
    return np.array([t.success for t in trajs], bool)


def paired_margin(ours: np.ndarray, theirs: np.ndarray) -> dict:
    """``ours - theirs`` success rate over the same tasks, its 95% interval (normal
    approximation of the paired differences) and the tasks only one side solved."""
    d = ours.astype(float) - theirs.astype(float)
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {
        "margin": float(d.mean()),
        "interval": [float(d.mean() - half), float(d.mean() + half)],
        "only ours": int(np.sum(ours & ~theirs)),
        "only theirs": int(np.sum(~ours & theirs)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    state = RunState.load(args.run_dir)
    if state is None:
        raise SystemExit(f"{args.run_dir} has no completed iteration")
    tree = state.skill_tree()
    rows = [json.loads(line) for line in (args.run_dir / "metrics.jsonl").read_text().splitlines()]
    final = VLAPolicy.from_pretrained(args.run_dir / state.checkpoint)
    control_hz = float(state.config["env"]["control_hz"])

    print(
        f"run {args.run_dir}: {state.iteration} iterations, {state.trials:,} trials, {state.elapsed_s / 60:.1f} min"
    )
    print("\n| iteration | node | trials (total) | explored | policy success (node; ancestors) | s |")
    print("|--:|---|--:|---|---|--:|")
    for r in rows:
        rest = ", ".join(f"{k} {v:.0%}" for k, v in r["success"].items() if k != r["node"])
        own = r["success"].get(r["node"])
        print(
            f"| {r['iteration']} | {r['node']} | {r['trials_total']:,} | {r['explore']['kind']} | "
            f"{'-' if own is None else f'{own:.0%}'}{'; ' + rest if rest else ''} | {r['seconds']:.0f} |"
        )

    results = {}
    with LocalBackend(control_hz=control_hz) as backend:
        for node in tree.nodes:
            mine = [r for r in rows if r["node"] == node.name]
            info = state.nodes[node.name]
            if not mine or info["best_params"] is None:
                continue
            tasks = node.distribution()
            seed = HELD_OUT_SEED + len(results)
            first = mine[0]["iteration"]
            bc_once = VLAPolicy.from_pretrained(args.run_dir / "checkpoints" / checkpoint_name(first))
            mastered_at = next((r for r in mine if r["mastered"]), None)
            runs = {
                "primitives alone": outcomes(
                    evaluate_params(np.array(info["best_params"]), tasks, backend, args.tasks, seed)
                ),
                "BC once": outcomes(evaluate_policy(bc_once, tasks, backend, args.tasks, seed).trajectories),
                "co-evolution": outcomes(
                    evaluate_policy(final, tasks, backend, args.tasks, seed).trajectories
                ),
            }
            best = max(("primitives alone", "BC once"), key=lambda k: runs[k].mean())
            results[node.name] = {
                **{k: float(v.mean()) for k, v in runs.items()},
                "against": best,
                **paired_margin(runs["co-evolution"], runs[best]),
                "status": tree.status[node.name],
                "iterations": len(mine),
                "trials": info["trials"],
                "seconds": sum(r["seconds"] for r in mine),
                "mastered at iteration": None if mastered_at is None else mastered_at["iteration"],
            }
    print(f"\nheld-out success over {args.tasks} tasks per node (seed {HELD_OUT_SEED}+):\n")
    print(
        "| node | status | iterations | trials | wall | primitives alone | BC once | co-evolution "
        "| margin (95% interval) | tasks only it / only the baseline solved |"
    )
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, r in results.items():
        lo, hi = r["interval"]
        print(
            f"| {name} | {r['status']} | {r['iterations']} | {r['trials']:,} | {r['seconds'] / 60:.1f} min | "
            f"{r['primitives alone']:.1%} | {r['BC once']:.1%} | {r['co-evolution']:.1%} | "
            f"{100 * r['margin']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f}) vs {r['against']} | "
            f"{r['only ours']} / {r['only theirs']} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"nodes": results, "curve": rows}, indent=2))


if __name__ == "__main__":
    main()
