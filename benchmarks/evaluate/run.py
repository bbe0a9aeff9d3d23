"""The evolution loop against its two baselines, on the same held-out tasks, from one run.

    python -m robo_coevolve budget=full hydra.run.dir=runs/full     # the run (state-only policy)
    python -m benchmarks.evaluate run runs/full [--tasks 200]

For every node the run reached, on ``--tasks`` held-out tasks of the node's distribution (drawn
from ``evaluation.seeds.RUN``, a seed neither the loop's exploration nor its evaluations used):

- **primitives alone**: the node's motion-primitive search answer (best mode, open loop, no
  learned policy), i.e. the explorer without the rest of the loop;
- **BC once**: behaviour cloning once on the node's first iteration's successes (static data):
  ``--bc-seeds`` fresh clones, each trained once with the run's own training settings on the
  segments that iteration stored, rehearsing what the library held of the other skills before
  it, and never selected by rollouts. Its rate is the mean over the clones;
- **co-evolution**: the run's final policy (after every later round, rehearsal included).

Beside them, **loop, first iteration** is the policy the loop kept at the node's first
iteration: trained on the same data as BC once, but chosen by closed-loop rollouts among its
candidates and redraws. It is no baseline (it is the loop's own work); it shows how much of the
margin over BC once the first iteration's selection made, and how much the later rounds.

All run on the same tasks, so the margin (co-evolution minus the better baseline) is a paired
difference, printed with its 95% interval (``evaluation.paired_margin``) and the tasks only one
of the two solved (BC once: by any of its clones). A margin whose interval holds 0 is not a
difference these tasks can show. Every arm's success is also broken down by the tasks' egg mass
(fifths of the node's tasks). Each BC once clone is also run on the skills it rehearsed. The
tree row pools every node's tasks: the final policy against each node's own primitive answer,
and against the last node's BC once clones. The clones train at once, one per core.

``--push N`` makes every held-out task push the egg once, sideways, at a random time (N newtons,
``TaskSpec.disturbance_force``): tasks the open-loop answer was not made for, where a closed-loop
policy can recover.

Also prints the run's curve (policy success per iteration), trials and wall time per node until
mastery, from ``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robo_coevolve.evaluation import (
    bc_once,
    by_mass,
    load_run,
    outcomes,
    paired_margin,
    pushed,
    seeds,
    table,
    write_json,
)
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import evaluate_params
from robo_coevolve.learn import evaluate_policy
from robo_coevolve.task_spec import TaskSpecError

BASELINES = ("primitives alone", "BC once")
ARMS = ("primitives alone", "BC once", "loop, first iteration", "co-evolution")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--bc-seeds", type=int, default=3, help="BC once clones per node (training seeds)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--push",
        type=float,
        default=0.0,
        help="N: every held-out task pushes the egg once, sideways, at a random time "
        "(TaskSpec.disturbance_force; 0 = the node's own tasks)",
    )


def run(args: argparse.Namespace) -> None:
    r = load_run(args.run_dir)
    state, tree = r.state, r.tree
    try:  # TaskSpec checks the push, before any work
        distributions = {node.name: pushed(node.distribution(), args.push) for node in tree.nodes}
    except TaskSpecError as e:
        raise SystemExit(f"--push {args.push}: {e}") from None
    rows = r.metrics
    final = r.policy()

    print(
        f"run {r.dir}: {state.iteration} iterations, {state.trials:,} trials, {state.elapsed_s / 60:.1f} min\n"
    )
    curve = []
    for m in rows:
        rest = ", ".join(f"{k} {v:.0%}" for k, v in m["success"].items() if k != m["node"])
        own = m["success"].get(m["node"])
        success = ("-" if own is None else f"{own:.0%}") + (f"; {rest}" if rest else "")
        curve.append(
            [
                m["iteration"],
                m["node"],
                f"{m['trials_total']:,}",
                m["explore"]["kind"],
                success,
                f"{m['seconds']:.0f}",
            ]
        )
    columns = ["iteration", "node", "trials (total)", "explored", "policy success (node; ancestors)", "s"]
    print(table(columns, curve, left=0))

    results, clones, arms = {}, {}, {}
    held_out = {}  # node -> (tasks, seed): the same tasks for every arm
    with LocalBackend(control_hz=r.control_hz) as backend:
        measured = {}

        def outcome(policy, node) -> np.ndarray:
            """The policy's outcomes on the node's held-out tasks, each pair run once (the policy
            is kept with them, so that its id is not reused)."""
            key = (id(policy), node.name)
            if key not in measured:
                tasks, seed = held_out[node.name]
                trajs = evaluate_policy(policy, tasks, backend, args.tasks, seed).trajectories
                measured[key] = (policy, outcomes(trajs))
            return measured[key][1]

        for node in tree.nodes:
            mine = [m for m in rows if m["node"] == node.name]
            info = state.nodes[node.name]
            if not mine or info["best_params"] is None:
                continue
            held_out[node.name] = (distributions[node.name], seeds.RUN + len(results))
            first = mine[0]["iteration"]
            first_policy = r.policy(first)
            clones[node.name] = bc_once(r, node.skill, first, first_policy.config, range(args.bc_seeds))[0]
            mastered_at = next((m for m in mine if m["mastered"]), None)
            tasks, seed = held_out[node.name]
            runs = {
                "primitives alone": outcomes(
                    evaluate_params(np.array(info["best_params"]), tasks, backend, args.tasks, seed)
                ),
                "BC once": np.array([outcome(p, node) for p in clones[node.name]]),
                "loop, first iteration": outcome(first_policy, node),
                "co-evolution": outcome(final, node),
            }
            arms[node.name] = runs
            rates = {k: float(v.mean()) for k, v in runs.items()}
            best = max(BASELINES, key=rates.__getitem__)
            masses = np.array(
                [t.egg_mass for t in tasks.sample_many(np.random.default_rng(seed), args.tasks)]
            )
            results[node.name] = {
                **rates,
                "BC once, each clone": [float(o.mean()) for o in runs["BC once"]],
                "by egg mass": by_mass(masses, runs),
                "against": best,
                **paired_margin(runs["co-evolution"], runs[best]),
                "status": tree.status[node.name],
                "iterations": len(mine),
                "trials": info["trials"],
                "seconds": sum(m["seconds"] for m in mine),
                "mastered at iteration": None if mastered_at is None else mastered_at["iteration"],
            }
        # what each node's BC once clones kept of the skills learnt before it
        names = list(held_out)
        kept = {
            name: {
                other: [float(outcome(p, tree.node(other)).mean()) for p in clones[name]]
                for other in names[:i]
            }
            for i, name in enumerate(names)
        }
        if held_out:  # one policy for the whole tree: each node's own primitives, or the last clones
            last = names[-1]
            whole = {
                "primitives alone": np.concatenate([arms[n]["primitives alone"] for n in held_out]),
                "BC once": np.concatenate(
                    [[outcome(p, tree.node(n)) for p in clones[last]] for n in held_out], axis=1
                ),
                "co-evolution": np.concatenate([arms[n]["co-evolution"] for n in held_out]),
            }
            rates = {k: float(v.mean()) for k, v in whole.items()}
            best = max(BASELINES, key=rates.__getitem__)
            tree_row = {**rates, "against": best, **paired_margin(whole["co-evolution"], whole[best])}

    push = f", a {args.push} N push on the egg in each" if args.push else ""
    print(
        f"\nheld-out success over {args.tasks} tasks per node (seed {seeds.RUN}+{push}), "
        f"BC once over {args.bc_seeds} clones:\n"
    )
    lines = []
    for name, n in results.items():
        lo, hi = n["interval"]
        lines.append(
            [
                name,
                n["status"],
                n["iterations"],
                f"{n['trials']:,}",
                f"{n['seconds'] / 60:.1f} min",
                *(f"{n[arm]:.1%}" for arm in ARMS),
                f"{100 * n['margin']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f}) vs {n['against']}",
                f"{n['only ours']} / {n['only theirs']}",
            ]
        )
    columns = ["node", "status", "iterations", "trials", "wall", *ARMS, "margin (95% interval)"]
    print(table([*columns, "tasks only it / only the baseline solved"], lines, left=2))
    print("\nby egg mass, fifths of each node's tasks:\n")
    lines = []
    for name, n in results.items():
        edges = n["by egg mass"]["edges (kg)"]
        for b in range(len(edges) - 1):
            mass = f"{1000 * edges[b]:.1f}-{1000 * edges[b + 1]:.1f}"
            lines.append([name, mass, *(f"{n['by egg mass'][arm][b]:.1%}" for arm in ARMS)])
    print(table(["node", "egg mass (g)", *ARMS], lines, left=2))
    if held_out:
        lo, hi = tree_row["interval"]
        print(
            f"\nthe tree, every node's tasks: primitives alone (each node's) {tree_row['primitives alone']:.1%}, "
            f"BC once ({last}'s clones) {tree_row['BC once']:.1%}, co-evolution {tree_row['co-evolution']:.1%}: "
            f"margin {100 * tree_row['margin']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f}) vs {tree_row['against']}"
        )
        print("\nBC once clones, each, on their own node and on the skills they rehearsed:")
        for name in held_out:
            each = ", ".join(f"{x:.1%}" for x in results[name]["BC once, each clone"])
            rest = "; ".join(
                f"{other} " + ", ".join(f"{x:.0%}" for x in xs) for other, xs in kept[name].items()
            )
            print(f"- {name}: {each}" + (f" (kept {rest})" if rest else ""))
    report = {"nodes": results, "curve": rows}
    if held_out:
        report |= {"BC once kept": kept, "tree": tree_row}
    write_json(args.json, report)
