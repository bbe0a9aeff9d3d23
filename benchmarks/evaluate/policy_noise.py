"""How often a run's policy still succeeds under the loop's exploration noise, per node and
temperature: the share of its noisy episodes that can become new data.

    python -m robo_coevolve budget=full seed=2 hydra.run.dir=runs/s2      # any run with a policy
    python -m benchmarks.evaluate policy-noise runs/s2 [--tasks 100] [--temperatures 0 0.005 0.01 0.02 0.03]

Every temperature runs the same ``--tasks`` tasks of each node the run reached (drawn from
``--seed``), with the run's noise kind and per-axis scale (``explore.schedule``) and one noise
seed per task, through ``run_policy_episodes`` as the loop runs them. Temperature 0 is the
noise-free reference, measured in the same run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robo_coevolve.evaluation import load_run, rate, seeds, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.policy import VLAPolicy


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=Path, help="another checkpoint than the run's latest")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.005, 0.01, 0.02, 0.03])
    parser.add_argument("--seed", type=int, default=seeds.POLICY_NOISE)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--json", type=Path, help="also write the rates here")


def run(args: argparse.Namespace) -> None:
    r = load_run(args.run_dir)
    if any(t < 0 for t in args.temperatures):
        raise SystemExit(f"--temperatures must be >= 0, got {args.temperatures}")
    schedule = r.state.config["explore"]["schedule"]
    policy = VLAPolicy.from_pretrained(args.checkpoint) if args.checkpoint else r.policy()
    nodes = [n for n in r.tree.nodes if r.state.nodes.get(n.name, {}).get("best_params") is not None]

    print(f"{r.dir}: {args.tasks} tasks per node, noise {schedule['noise_kind']} x {schedule['noise_scale']}")
    report = {}
    with LocalBackend(workers=args.workers, control_hz=r.control_hz) as backend:
        for node in nodes:
            tasks = node.distribution().sample_many(np.random.default_rng(args.seed), args.tasks)
            rates = []
            for t in args.temperatures:
                noise = NoiseSpec(schedule["noise_kind"], t, schedule["noise_scale"]) if t > 0 else None
                episodes = [PolicyEpisode(task, noise, 1000 + i) for i, task in enumerate(tasks)]
                rates.append(rate(backend.run_policy(policy, episodes)))
            report[node.name] = dict(zip((f"{t:g}" for t in args.temperatures), rates, strict=True))
            print(
                f"{node.name}: " + ", ".join(f"T={t} {x:.0%}" for t, x in report[node.name].items()),
                flush=True,
            )
    columns = ["node", *(f"T={t:g}" for t in args.temperatures)]
    print("\n" + table(columns, [[name, *(f"{x:.0%}" for x in xs.values())] for name, xs in report.items()]))
    write_json(args.json, {"tasks": args.tasks, "success": report})
