"""A new stage of the loop replayed offline: clones of a node trained as the loop trains them, on a
run's library, one per training seed, and what each does closed loop on the node and on the
nodes it must keep.

    python -m robo_coevolve budget=full seed=0 hydra.run.dir=runs/s0      # any run, stopped anywhere
    python benchmarks/stage_report.py runs/s0 --node catch --iteration 8 --seeds 0 1 2 3

The data are the loop's (``evolve.datasets``, ``evolve.cloning.Cloner``): the node's segments (with
``--iteration``, only those that iteration stored; ``--source``, only that teacher's, as
``train.split_sources`` clones them), at most ``train.max_segments``; the rehearsal is each kept
node's latest ``train.max_segments`` segments of the source its policy was last cloned from
(``state.json``). The policy and training settings are the run's resolved config, with
``--policy`` / ``--train`` JSON overrides. Each training seed's clone is a fresh policy (a new
stage) and runs without noise on ``--eval`` tasks of every node, drawn from ``--eval-seed``
(``evaluate_policy``'s held-out default; the loop's own evaluation seeds are other streams).

``--teacher CHECKPOINT`` rehearses the kept skills on a teacher policy's actions instead of the
library's (``learn.distill.Distiller`` labels: its executed chunk at every rehearsal state), e.g.
the run's checkpoint from before the stage, which held those skills.

Clones of the same data and settings differ by tens of points between training seeds, often
bimodally (a flip clone flips ~80% or ~0%), so compare settings over >= 4 seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from robo_coevolve.evolve.datasets import latest_indices  # noqa: E402
from robo_coevolve.evolve.run_state import RunState  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy  # noqa: E402
from robo_coevolve.learn.distill import Distiller  # noqa: E402
from robo_coevolve.library import SkillLibrary  # noqa: E402
from robo_coevolve.policy import PolicyConfig, VLAPolicy  # noqa: E402


def settings(section: dict, overrides: str) -> dict:
    return {k: v for k, v in {**section, **json.loads(overrides)}.items() if k != "_target_"}


def indices(
    library: SkillLibrary, skill: str, source: str | None, iteration: int | None, last: int, limit: int
) -> list[int]:
    """The latest ``limit`` segments of ``skill`` from ``source`` (None: any) stored by
    ``iteration`` (None: any up to ``last``, the run's last committed one: an interrupted
    iteration's segments are not the run's yet)."""

    def stored(meta: dict) -> bool:
        k = meta.get("iteration", 0)
        return k == iteration if iteration is not None else k <= last

    return latest_indices([m for m in library.metadata(skill) if stored(m["meta"])], source, limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--node", required=True, help="the node the stage trains")
    parser.add_argument("--iteration", type=int, help="only the node's segments stored by this iteration")
    parser.add_argument("--source", choices=["primitives", "policy"], help="only this teacher's segments")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--eval", type=int, default=50, help="tasks per node")
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--train", default="{}", help='TrainConfig overrides, e.g. {"normalize_on": "all"}')
    parser.add_argument("--policy", default="{}", help='PolicyConfig overrides, e.g. {"components": 1}')
    parser.add_argument("--teacher", type=Path, help="label the rehearsal with this checkpoint's actions")
    parser.add_argument("--workers", type=int, help="rollout worker processes (default: all cores)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()

    state = RunState.load(args.run_dir)
    if state is None:
        raise SystemExit(f"{args.run_dir} has no completed iteration (no state.json)")
    tree = state.skill_tree()
    if args.node not in {n.name for n in tree.nodes}:
        raise SystemExit(f"--node {args.node}: not in the run's skill tree {[n.name for n in tree.nodes]}")
    node = tree.node(args.node)
    # rehearsed as the loop does (evolve.cloning): what training the node keeps, less its own skill
    kept = [n for n in tree.kept(node.name) if n.skill != node.skill]
    train_section = state.config["train"]
    limit = int(train_section["max_segments"])
    policy_config = PolicyConfig(**settings(state.config["policy"], args.policy))
    config = TrainConfig(**{**settings(train_section["fit"], args.train), "progress": False})
    library = SkillLibrary(args.run_dir / "library")
    image = policy_config.image_size if policy_config.use_image else None

    def segments(skill: str, source: str | None, iteration: int | None = None) -> list:
        chosen = indices(library, skill, source, iteration, state.iteration, limit)
        if not chosen:
            raise SystemExit(
                f"{args.run_dir}: no {skill} segments from {source or 'any source'} at {iteration}"
            )
        return library.segments(skill, indices=chosen)

    def data(segs: list) -> ChunkDataset:
        return ChunkDataset.from_segments(segs, policy_config.chunk, image)

    current = data(segments(node.skill, args.source, args.iteration))
    # as the loop: each kept node from the source its policy was last cloned from
    rehearsed = {n.name: segments(n.skill, state.nodes[n.name].get("source")) for n in kept}
    if args.teacher is None:
        rehearsed = {name: data(segs) for name, segs in rehearsed.items()}
    else:
        labeller = Distiller(VLAPolicy.from_pretrained(args.teacher), backend=None)
        rehearsed = {name: labeller.from_segments(segs) for name, segs in rehearsed.items()}
    rehearsal = ChunkDataset.concat(list(rehearsed.values())) if rehearsed else None
    print(
        f"{args.run_dir}: {node.name} {len(current):,} samples; rehearsing "
        + (", ".join(f"{name} {len(d):,}" for name, d in rehearsed.items()) or "nothing")
        + (f" (labelled by {args.teacher})" if args.teacher else "")
        + f"; share {config.rehearsal_share}, normalize_on {config.normalize_on}, {config.steps} steps "
        + f"(rehearsal {config.rehearsal_steps})"
    )
    rows = []
    with LocalBackend(workers=args.workers) as backend:
        for seed in args.seeds:
            torch.manual_seed(seed)
            policy = VLAPolicy(policy_config)
            fit = BCTrainer(policy, dataclasses.replace(config, seed=seed)).fit(current, rehearsal=rehearsal)
            start = time.perf_counter()
            success = {
                n.name: evaluate_policy(
                    policy, n.distribution(), backend, args.eval, seed=args.eval_seed
                ).success_rate
                for n in [node, *kept]
            }
            row = {
                "seed": seed,
                "success": success,
                "steps": fit["steps"],
                "best_step": fit["best_step"],
                "train_s": round(fit["seconds"], 1),
                "eval_s": round(time.perf_counter() - start, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    names = [node.name, *(n.name for n in kept)]
    print("\n| node | " + " | ".join(f"seed {r['seed']}" for r in rows) + " | mean |")
    print("|---|" + "--:|" * (len(rows) + 1))
    for name in names:
        rates = [r["success"][name] for r in rows]
        print(
            f"| {name} | "
            + " | ".join(f"{100 * x:.0f}%" for x in rates)
            + f" | {100 * np.mean(rates):.1f}% |"
        )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"run_dir": str(args.run_dir)}, "rows": rows}, indent=1, default=str
            )
        )


if __name__ == "__main__":
    main()
