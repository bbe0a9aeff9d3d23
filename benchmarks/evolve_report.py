"""The evolution loop against its two baselines, on the same held-out tasks, from one run.

    python -m robo_coevolve budget=full hydra.run.dir=runs/full     # the run (state-only policy)
    python benchmarks/evolve_report.py runs/full [--tasks 200]

For every node the run reached, on ``--tasks`` held-out tasks of the node's distribution (drawn
from a seed neither the loop's exploration nor its own evaluations used):

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
difference: it is printed with its 95% interval (normal approximation over the tasks' paired
outcomes, BC once's outcome on a task being the share of its clones that solved it) and the
tasks only one of the two solved (BC once: by any of its clones). A margin whose interval holds
0 is not a difference these tasks can show. Every arm's success is also broken down by the
tasks' egg mass (fifths of the node's tasks: where the failures lie). Each BC once clone is
also run on the skills it rehearsed (what it kept of them). The tree row pools every node's
tasks: the final policy against each node's own primitive answer, and against the last node's
BC once clones (the policy a user gets from cloning each node once). The clones train at once,
one per core.

``--push N`` makes every held-out task push the egg once, sideways, at a random time (N newtons,
``TaskSpec.disturbance_force``): tasks the open-loop answer was not made for, where a closed-loop
policy can recover.

Also prints the run's curve (policy success per iteration), trials and wall time per node until
mastery, from ``metrics.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from stage_report import indices, settings  # noqa: E402 (a sibling script: the loop's data for a stage)

from robo_coevolve.evolve.run_state import RunState, checkpoint_name  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.search import evaluate_params  # noqa: E402
from robo_coevolve.learn import ChunkDataset, CloneJob, TrainConfig, evaluate_policy, fit_clones  # noqa: E402
from robo_coevolve.library import SkillLibrary  # noqa: E402
from robo_coevolve.policy import VLAPolicy  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402
from robo_coevolve.task_spec import TaskSpecError  # noqa: E402

HELD_OUT_SEED = 777_777
BASELINES = ("primitives alone", "BC once")


def outcomes(trajs) -> np.ndarray:
    return np.array([t.success for t in trajs], bool)


def paired_margin(ours: np.ndarray, theirs: np.ndarray) -> dict:
    """``ours - theirs`` success rate over the same tasks, its 95% interval (normal
    approximation of the paired differences) and the tasks only one side solved. ``theirs`` may
    hold several policies' outcomes (one row each): a task then counts as the share of them that
    solved it, and as theirs where any did."""
    theirs = np.atleast_2d(theirs)
    d = ours.astype(float) - theirs.mean(axis=0)
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
    return {
        "margin": float(d.mean()),
        "interval": [float(d.mean() - half), float(d.mean() + half)],
        "only ours": int(np.sum(ours & ~theirs.any(axis=0))),
        "only theirs": int(np.sum(~ours & theirs.any(axis=0))),
    }


def by_mass(masses: np.ndarray, runs: dict[str, np.ndarray], bins: int = 5) -> dict:
    """Each arm's success within each ``bins``-quantile of the tasks' egg masses (a 2-D arm, one
    row per policy, by the mean of its rows): where on the node's mass range the failures lie."""
    edges = np.quantile(masses, np.linspace(0.0, 1.0, bins + 1))
    which = np.clip(np.searchsorted(edges, masses, side="right") - 1, 0, bins - 1)
    return {
        "edges (kg)": edges.tolist(),
        **{arm: [float(o[..., which == b].mean()) for b in range(bins)] for arm, o in runs.items()},
    }


def pushed(tasks: TaskDistribution, force: float) -> TaskDistribution:
    """``tasks`` with a ``force`` N push on the egg in each (0: as they are); TaskSpec checks it."""
    return replace(tasks, base=tasks.base.replace(disturbance_force=force)) if force else tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    args = parser.parse_args()
    state = RunState.load(args.run_dir)
    if state is None:
        raise SystemExit(f"{args.run_dir} has no completed iteration")
    tree = state.skill_tree()
    try:  # TaskSpec checks the push, before any work
        distributions = {node.name: pushed(node.distribution(), args.push) for node in tree.nodes}
    except TaskSpecError as e:
        parser.error(f"--push {args.push}: {e}")
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

    results, clones, arms = {}, {}, {}
    held_out = {}  # node -> (tasks, seed): the same tasks for every arm
    with LocalBackend(control_hz=control_hz) as backend:
        measured = {}

        def run(policy, node) -> np.ndarray:
            """The policy's outcomes on the node's held-out tasks, each pair run once (the policy
            is kept with them, so that its id is not reused)."""
            key = (id(policy), node.name)
            if key not in measured:
                tasks, seed = held_out[node.name]
                trajs = evaluate_policy(policy, tasks, backend, args.tasks, seed).trajectories
                measured[key] = (policy, outcomes(trajs))
            return measured[key][1]

        for node in tree.nodes:
            mine = [r for r in rows if r["node"] == node.name]
            info = state.nodes[node.name]
            if not mine or info["best_params"] is None:
                continue
            held_out[node.name] = (distributions[node.name], HELD_OUT_SEED + len(results))
            first = mine[0]["iteration"]
            first_policy = VLAPolicy.from_pretrained(args.run_dir / "checkpoints" / checkpoint_name(first))
            clones[node.name] = bc_once(
                args.run_dir, state, node.skill, first, first_policy.config, range(args.bc_seeds)
            )[0]
            mastered_at = next((r for r in mine if r["mastered"]), None)
            tasks, seed = held_out[node.name]
            runs = {
                "primitives alone": outcomes(
                    evaluate_params(np.array(info["best_params"]), tasks, backend, args.tasks, seed)
                ),
                "BC once": np.array([run(p, node) for p in clones[node.name]]),
                "loop, first iteration": run(first_policy, node),
                "co-evolution": run(final, node),
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
                "seconds": sum(r["seconds"] for r in mine),
                "mastered at iteration": None if mastered_at is None else mastered_at["iteration"],
            }
        # what each node's BC once clones kept of the skills learnt before it
        names = list(held_out)
        kept = {
            name: {
                other: [float(run(p, tree.node(other)).mean()) for p in clones[name]] for other in names[:i]
            }
            for i, name in enumerate(names)
        }
        if held_out:  # one policy for the whole tree: each node's own primitives, or the last clones
            last = names[-1]
            whole = {
                "primitives alone": np.concatenate([arms[n]["primitives alone"] for n in held_out]),
                "BC once": np.concatenate(
                    [[run(p, tree.node(n)) for p in clones[last]] for n in held_out], axis=1
                ),
                "co-evolution": np.concatenate([arms[n]["co-evolution"] for n in held_out]),
            }
            rates = {k: float(v.mean()) for k, v in whole.items()}
            best = max(BASELINES, key=rates.__getitem__)
            tree_row = {**rates, "against": best, **paired_margin(whole["co-evolution"], whole[best])}

    print(
        f"\nheld-out success over {args.tasks} tasks per node (seed {HELD_OUT_SEED}+"
        f"{f', a {args.push} N push on the egg in each' if args.push else ''}), BC once over {args.bc_seeds} clones:\n"
    )
    print(
        "| node | status | iterations | trials | wall | primitives alone | BC once | loop, first iteration "
        "| co-evolution | margin (95% interval) | tasks only it / only the baseline solved |"
    )
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name, r in results.items():
        lo, hi = r["interval"]
        print(
            f"| {name} | {r['status']} | {r['iterations']} | {r['trials']:,} | {r['seconds'] / 60:.1f} min | "
            f"{r['primitives alone']:.1%} | {r['BC once']:.1%} | {r['loop, first iteration']:.1%} | "
            f"{r['co-evolution']:.1%} | {100 * r['margin']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f}) vs "
            f"{r['against']} | {r['only ours']} / {r['only theirs']} |"
        )
    arms_named = ("primitives alone", "BC once", "loop, first iteration", "co-evolution")
    print("\nby egg mass, fifths of each node's tasks:\n")
    print("| node | egg mass (g) | " + " | ".join(arms_named) + " |")
    print("|---|---|" + "--:|" * len(arms_named))
    for name, r in results.items():
        edges = r["by egg mass"]["edges (kg)"]
        for b in range(len(edges) - 1):
            rates = " | ".join(f"{r['by egg mass'][arm][b]:.1%}" for arm in arms_named)
            print(f"| {name} | {1000 * edges[b]:.1f}-{1000 * edges[b + 1]:.1f} | {rates} |")
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
    if args.json:
        report = {"nodes": results, "curve": rows}
        if held_out:
            report |= {"BC once kept": kept, "tree": tree_row}
        args.json.write_text(json.dumps(report, indent=2))


def bc_once(
    run_dir: Path,
    state: RunState,
    skill: str,
    first: int,
    config,
    seeds: Sequence[int],
    extras: Sequence[ChunkDataset | None] = (None,),
) -> list[list[VLAPolicy]]:
    """A fresh policy per training seed of ``seeds``, each cloned once, with the run's training
    settings for a new stage, from the latest ``max_segments`` segments of ``skill`` that
    iteration ``first`` stored, rehearsing those of every other skill stored before it: the
    loop's first training of the node (``stage_report.py --iteration``), without its selection.
    One list of clones per entry of ``extras``, rows added to the node's own (None: none); the
    library is read once and every clone trains in one pool."""
    section = state.config["train"]
    train = TrainConfig(**{**settings(section["fit"], "{}"), "progress": False})
    library = SkillLibrary(run_dir / "library")
    image = config.image_size if config.use_image else None

    def data(name: str, iteration: int | None, last: int) -> ChunkDataset | None:
        chosen = indices(library, name, None, iteration, last, int(section["max_segments"]))
        return (
            ChunkDataset.from_segments(library.segments(name, indices=chosen), config.chunk, image)
            if chosen
            else None
        )

    own = data(skill, first, first)
    if own is None:
        raise SystemExit(f"{run_dir}: the library holds no {skill} segment of iteration {first}")
    earlier = [d for d in (data(s, None, first - 1) for s in library.skills() if s != skill) if d]
    rehearsal = ChunkDataset.concat(earlier) if earlier else None
    jobs = []
    for extra in extras:
        rows = own if extra is None else ChunkDataset.concat([own, extra])
        for seed in seeds:
            torch.manual_seed(seed)
            policy = VLAPolicy(config)
            jobs.append(CloneJob(policy, torch.get_rng_state(), replace(train, seed=seed), rows, rehearsal))
    policies = [policy for policy, _ in fit_clones(jobs, workers=os.cpu_count() or 1)]
    return [policies[i : i + len(seeds)] for i in range(0, len(policies), len(seeds))]


if __name__ == "__main__":
    main()
