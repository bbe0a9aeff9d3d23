"""A new stage of the loop replayed offline: clones of a node trained as the loop trains them, on a
run's library, one per training seed, and what each does closed loop on the node and on the
nodes it must keep.

    python -m robo_coevolve budget=full seed=0 hydra.run.dir=runs/s0      # any run, stopped anywhere
    python -m benchmarks.evaluate stage runs/s0 --node catch --iteration 8 --seeds 0 1 2 3

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
bimodally, so compare settings over several seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.evaluation import config_fields, load_run, seeds, stored_indices, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy
from robo_coevolve.learn.distill import Distiller
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--node", required=True, help="the node the stage trains")
    parser.add_argument("--iteration", type=int, help="only the node's segments stored by this iteration")
    parser.add_argument("--source", choices=["primitives", "policy"], help="only this teacher's segments")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--eval", type=int, default=50, help="tasks per node")
    parser.add_argument("--eval-seed", type=int, default=seeds.POLICY)
    parser.add_argument("--train", default="{}", help='TrainConfig overrides, e.g. {"normalize_on": "all"}')
    parser.add_argument("--policy", default="{}", help='PolicyConfig overrides, e.g. {"components": 1}')
    parser.add_argument("--teacher", type=Path, help="label the rehearsal with this checkpoint's actions")
    parser.add_argument("--workers", type=int, help="rollout worker processes (default: all cores)")
    parser.add_argument("--json", type=Path, help="also write the rows here")


def run(args: argparse.Namespace) -> None:
    r = load_run(args.run_dir)
    state, tree = r.state, r.tree
    node = r.node(args.node)
    # rehearsed as the loop does (evolve.cloning): what training the node keeps, less its own skill
    kept = [n for n in tree.kept(node.name) if n.skill != node.skill]
    train_section = state.config["train"]
    limit = int(train_section["max_segments"])
    policy_config = PolicyConfig(**config_fields(state.config["policy"], args.policy))
    config = TrainConfig(**{**config_fields(train_section["fit"], args.train), "progress": False})
    library = SkillLibrary(r.dir / "library")
    image = policy_config.image_size if policy_config.use_image else None

    def segments(skill: str, source: str | None, iteration: int | None = None) -> list:
        chosen = stored_indices(library, skill, source, iteration, state.iteration, limit)
        if not chosen:
            raise SystemExit(f"{r.dir}: no {skill} segments from {source or 'any source'} at {iteration}")
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
    rehearsal = list(rehearsed.values())  # one data set per kept node (TrainConfig.rehearsal_balance)
    print(
        f"{r.dir}: {node.name} {len(current):,} samples; rehearsing "
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
    lines = []
    for name in [node.name, *(n.name for n in kept)]:
        rates = [row["success"][name] for row in rows]
        lines.append([name, *(f"{100 * x:.0f}%" for x in rates), f"{100 * np.mean(rates):.1f}%"])
    print("\n" + table(["node", *(f"seed {row['seed']}" for row in rows), "mean"], lines))
    write_json(args.json, {"args": vars(args) | {"run_dir": str(r.dir)}, "rows": rows})
