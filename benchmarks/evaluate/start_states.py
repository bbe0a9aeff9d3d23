"""Clones of a node with and without its teacher's first chunk on fresh start states.

    python -m robo_coevolve budget=full seed=4 hydra.run.dir=runs/full
    python -m benchmarks.evaluate start-states runs/full --node catch [--starts 2000] [--seeds 0 1 2 3 4 5]

A clone of demonstrations sees each episode's first state once, and a catch is decided by the
first chunk. Here the node's BC once clones (``evaluation.bc_once``: its first iteration's
segments, the run's settings, one per training seed) are trained beside clones of the same data
plus ``--starts`` start states of fresh tasks of the node, each labelled with the first chunk the
node's primitive answer commands from that state (the motion is a function of the first
observation, so this needs no rollout). Every clone, and the answer itself, runs on the held-out
tasks ``evaluate run`` draws for the node: the success overall and by egg-mass fifth says
whether the extra first states bring a clone nearer its teacher, and where. Each clone also runs
on ``--kept-tasks`` tasks of every earlier node.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from robo_coevolve.action_space import command_as_action
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.evaluation import bc_once, by_mass, load_run, outcomes, seeds, table, write_json
from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import evaluate_params
from robo_coevolve.learn import ChunkDataset, evaluate_policy
from robo_coevolve.task_distribution import TaskDistribution


def answer_starts(
    params: np.ndarray, tasks: TaskDistribution, n: int, seed: int, chunk: int, control_hz: float
) -> ChunkDataset:
    """``n`` fresh tasks' first observations, each labelled with the first ``chunk`` actions the
    primitive ``params`` commands from it (as changes of the starting command, as
    ``ChunkDataset.from_segments`` labels a demonstration's first state)."""
    drawn = tasks.sample_many(np.random.default_rng(seed), n)
    env = EggFlipEnv(task=drawn[0], control_hz=control_hz)
    proprio, egg, deltas = [], [], []
    try:
        for task in drawn:
            obs, _ = env.reset(seed=task.seed, options={"task": task})
            targets = primitives.motion(params, obs).targets(env.control_dt, env.horizon_steps)
            proprio.append(obs["proprio"])
            egg.append(obs["egg"])
            deltas.append(env.pose_to_action(targets[:chunk]) - command_as_action(obs["proprio"][None]))
    finally:
        env.close()
    return ChunkDataset(
        proprio=np.array(proprio, np.float32),
        egg=np.array(egg, np.float32),
        instruction=[t.instruction for t in drawn],
        deltas=np.array(deltas, np.float32),
        mask=np.ones((n, chunk), np.float32),
        segment_index=np.arange(n),
        time=np.zeros(n, np.float32),
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--node", default="catch")
    parser.add_argument("--starts", type=int, default=2000, help="start states added to the node's data")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--tasks", type=int, default=400, help="held-out tasks of the node")
    parser.add_argument("--kept-tasks", type=int, default=200, help="tasks of each earlier node")
    parser.add_argument("--json", type=Path)


def run(args: argparse.Namespace) -> None:
    r = load_run(args.run_dir)
    tree = r.tree
    node = r.node(args.node)
    first = r.first_iteration(node.name)
    params = r.state.nodes[node.name]["best_params"]
    if first is None or params is None:
        raise SystemExit(f"{r.dir}: the run never trained {node.name}")
    params = np.asarray(params)
    config = r.policy(first).config
    if config.use_image:
        raise SystemExit("start states are labelled for the state policy only (policy=state runs)")
    earlier = tree.nodes[: tree.nodes.index(node)]
    held_out_seed = seeds.RUN + len(earlier)  # evaluate run's tasks of this node
    starts = answer_starts(
        params, node.distribution(), args.starts, seeds.START_STATES, config.chunk, r.control_hz
    )
    plain, started = bc_once(r, node.skill, first, config, args.seeds, extras=(None, starts))
    arms = {"demonstrations": plain, f"+ {args.starts} start states": started}
    tasks = node.distribution()
    masses = np.array(
        [t.egg_mass for t in tasks.sample_many(np.random.default_rng(held_out_seed), args.tasks)]
    )
    report = {}
    with LocalBackend(control_hz=r.control_hz) as backend:
        answer = outcomes(evaluate_params(params, tasks, backend, args.tasks, held_out_seed))
        fifths = by_mass(masses, {"answer": answer})
        edges = fifths["edges (kg)"]
        print(
            f"{node.name}, {args.tasks} held-out tasks (seed {held_out_seed}); egg-mass fifths (g): "
            + ", ".join(f"{1000 * a:.1f}-{1000 * b:.1f}" for a, b in zip(edges[:-1], edges[1:], strict=True))
        )
        lines = [
            [
                "the answer (teacher)",
                "-",
                f"{answer.mean():.1%}",
                ", ".join(f"{x:.1%}" for x in fifths["answer"]),
            ]
            + [""] * len(earlier)
        ]
        for arm, clones in arms.items():
            report[arm] = []
            for seed, policy in zip(args.seeds, clones, strict=True):
                own = outcomes(
                    evaluate_policy(policy, tasks, backend, args.tasks, held_out_seed).trajectories
                )
                kept = {
                    n.name: evaluate_policy(
                        policy, n.distribution(), backend, args.kept_tasks, seeds.RUN + i
                    ).success_rate
                    for i, n in enumerate(earlier)
                }
                row = {
                    "seed": seed,
                    "success": float(own.mean()),
                    "by egg mass": by_mass(masses, {"c": own})["c"],
                    "kept": kept,
                }
                report[arm].append(row)
                lines.append(
                    [arm, seed, f"{row['success']:.1%}", ", ".join(f"{x:.1%}" for x in row["by egg mass"])]
                    + [f"{x:.1%}" for x in kept.values()]
                )
                print(f"{arm}, seed {seed}: {row['success']:.1%}", flush=True)
        for arm, got in report.items():
            mean = np.mean([row["by egg mass"] for row in got], axis=0)
            lines.append(
                [f"{arm}, mean", "", f"{np.mean([row['success'] for row in got]):.1%}"]
                + [", ".join(f"{x:.1%}" for x in mean)]
                + [f"{np.mean([row['kept'][n.name] for row in got]):.1%}" for n in earlier]
            )
    columns = ["clones of", "seed", node.name, "by egg-mass fifth", *(n.name for n in earlier)]
    print("\n" + table(columns, lines))
    write_json(args.json, {"answer": {"success": float(answer.mean()), **fifths}, "arms": report})
