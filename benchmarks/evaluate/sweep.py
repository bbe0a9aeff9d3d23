"""Policies side by side across the values of one perturbation: where a family's held-out range
spans both sides of nominal (servo gain 0.25-0.5 or 2-4), the suite's one rate per family hides
which side a policy gives up.

    python -m benchmarks.evaluate sweep runs/s1 --field servo_gain --values 0.3 1 2.5 3.5 \\
        --policy practised=runs/s1/checkpoints/iter_0003 --policy clone=runs/s1/checkpoints/iter_0003_clone

Every value runs the same ``--tasks`` tasks of each node (drawn from ``--seed``, away from the
loop's seeds), the field set to the value (a ``TaskSpec`` field: ``servo_gain``,
``action_latency``, ``disturbance_force``, ``egg_obs_noise``, ...), every policy without noise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robo_coevolve.evaluation import load_run, seeds, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import evaluate_tasks
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.task_spec import TaskSpec, TaskSpecError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--field", required=True, help="the TaskSpec field to sweep, e.g. servo_gain")
    parser.add_argument("--values", type=float, nargs="+", required=True)
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a policy (default: the run's latest)",
    )
    parser.add_argument("--tasks", type=int, default=30, help="tasks per node and value")
    parser.add_argument("--seed", type=int, default=seeds.SWEEP)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--json", type=Path, help="also write the rates here")


def _value(field: str, value: float):
    """``value`` as the field's type (latency counts steps), checked by ``TaskSpec`` itself."""
    kind = type(getattr(TaskSpec(), field))
    try:
        TaskSpec().replace(**{field: kind(value)})
    except TaskSpecError as e:
        raise SystemExit(str(e)) from None
    return kind(value)


def run(args: argparse.Namespace) -> None:
    r = load_run(args.run_dir)
    if not hasattr(TaskSpec(), args.field) or args.field in ("skill", "instruction", "seed"):
        raise SystemExit(
            f"--field {args.field!r} is no numeric TaskSpec field: see robo_coevolve/task_spec.py"
        )
    values = [_value(args.field, v) for v in args.values]
    policies = {"final": r.policy()} if not args.policy else {}
    for spec in args.policy:
        name, _, directory = spec.partition("=")
        if not name or not directory:
            raise SystemExit(f"--policy {spec!r}: give NAME=DIR")
        policies[name] = VLAPolicy.from_pretrained(directory)
    nodes = [n for n in r.tree.nodes if r.state.nodes.get(n.name, {}).get("best_params") is not None]
    rows, report = [], {}
    with LocalBackend(workers=args.workers, control_hz=r.control_hz) as backend:
        for node in nodes:
            base = node.distribution().sample_many(np.random.default_rng(args.seed), args.tasks)
            for v in values:
                tasks = [t.replace(**{args.field: v}) for t in base]
                rates = {n: evaluate_tasks(p, tasks, backend).success_rate for n, p in policies.items()}
                report.setdefault(node.name, {})[f"{v:g}"] = rates
                rows.append([node.name, f"{v:g}", *(f"{x:.0%}" for x in rates.values())])
                print(f"{node.name}, {args.field}={v:g}: {rates}", flush=True)
    print("\n" + table(["node", args.field, *policies], rows))
    write_json(args.json, {"field": args.field, "tasks": args.tasks, "success": report})
