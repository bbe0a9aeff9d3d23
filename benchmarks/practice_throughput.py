"""Practice (residual PPO) against its own rollouts: what learning costs per episode, and, on a
run's checkpoint, what practice buys on nominal and pushed tasks.

Throughput (``make bench`` shows it as a row of ``benchmarks.speed``): episodes per second of
``practise_rl`` against the same episodes run by the same policy without learning.

With ``--checkpoint``, that policy practises on every node at once, as the last node's practice
in the loop does, by ``--method`` with the shipped settings (``--set`` changes one, as a Hydra
override of the ``practice`` group, e.g. ``--set practice.rl.history=4``); success before and
after on fixed nominal tasks and on the same tasks with a 1 N push, and the minutes practice took;
``--save DIR`` keeps the practised policy (an arm for ``robo-coevolve-tree evaluate --suite
robustness --policy practised=DIR``).

    python -m benchmarks.practice_throughput [--quick] [--checkpoint RUN/checkpoints/iter_0003]
        [--save DIR] [--method rl|dpo] [--set practice.KEY=VALUE ...] [--tasks 200] [--json results.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from robo_coevolve.evaluation import table, write_json  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.closed_loop import PolicyEpisode  # noqa: E402
from robo_coevolve.learn import evaluate_tasks  # noqa: E402
from robo_coevolve.policy import PolicyConfig, VLAPolicy  # noqa: E402
from robo_coevolve.practice import PracticeConfig, RLConfig  # noqa: E402
from robo_coevolve.practice.rl import practise_rl  # noqa: E402
from robo_coevolve.skill_tree import SkillTree  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402
from robo_coevolve.workspace.build import build  # noqa: E402

PUSH = 1.0  # N: the pushed evaluation's disturbance


def rows_throughput(episodes: int, workers: int = 2) -> list[list[str]]:
    """``practise_rl`` on ``episodes`` scoop tasks vs the same episodes without learning."""
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_language=False, predict_end=False))
    tasks = TaskDistribution.for_skill("scoop").sample_many(np.random.default_rng(0), episodes)
    config = RLConfig(episodes_per_update=min(episodes, RLConfig().episodes_per_update))
    with LocalBackend(workers=workers) as backend:
        backend.run_policy(policy, [PolicyEpisode(t) for t in tasks[:workers]])  # start the workers
        start = time.perf_counter()
        backend.run_policy(policy, [PolicyEpisode(t, noise_seed=i) for i, t in enumerate(tasks)])
        plain = episodes / (time.perf_counter() - start)
        start = time.perf_counter()
        practise_rl(policy, tasks, backend, config, np.random.default_rng(0))
        practice = episodes / (time.perf_counter() - start)
    return [
        [
            f"practice throughput, scoop, {workers} workers (residual PPO, {episodes} episodes)",
            f"{practice:.1f} episodes/s",
            f"the same episodes without learning: {plain:.1f} episodes/s",
            f"{practice / plain:.2f}x",
        ]
    ]


def rows_checkpoint(
    checkpoint: str,
    n: int,
    save: str | None = None,
    method: str = "rl",
    seed: int = 1,
    overrides: tuple[str, ...] = (),
) -> list[list[str]]:
    """The policy at ``checkpoint`` practised on every node of the tree at once, as the last
    node's practice in the loop does (``practice.stage.learn`` by ``method`` with the shipped
    settings and ``overrides``, so rl and dpo get the same episodes on the same tasks; no gate:
    the method's own policy); saved to ``save`` if given. Success before and after on ``n`` fixed
    nominal tasks per node and the same tasks pushed with ``PUSH`` N."""
    from robo_coevolve.configs import compose
    from robo_coevolve.practice.stage import learn
    from robo_coevolve.practice.tasks import practice_tasks

    cfg = compose(f"practice={method}", *overrides)
    tree: SkillTree = build(cfg.skill_tree, "skill_tree")
    nodes = list(tree.nodes)
    clone = VLAPolicy.from_pretrained(checkpoint)
    config: PracticeConfig = build(cfg.practice, "practice")
    out = []
    with LocalBackend() as backend:
        start = time.perf_counter()
        rng = np.random.default_rng(seed)
        tasks = practice_tasks([nodes[-1], *nodes[:-1]], config, rng, clone.config.use_language)
        practised, _ = learn(clone, tasks, backend, config, rng)
        minutes = (time.perf_counter() - start) / 60
        if save:
            practised.save_pretrained(save)
        for i, node in enumerate(nodes):
            nominal = node.distribution().sample_many(np.random.default_rng([seed, i]), n)
            pushed = [t.replace(disturbance_force=PUSH) for t in nominal]
            for name, fixed in (("nominal", nominal), (f"pushed {PUSH:g} N", pushed)):
                before = evaluate_tasks(clone, fixed, backend).success_rate
                after = evaluate_tasks(practised, fixed, backend).success_rate
                out.append(
                    [
                        f"practice ({method}), {node.name}, {name} ({n} fixed tasks; {len(tasks)} episodes on "
                        f"{len(nodes)} nodes, {minutes:.1f} min)",
                        f"{after:.1%} practised",
                        f"the clone: {before:.1%}",
                        f"{100 * (after - before):+.1f} points",
                    ]
                )
                print(out[-1], file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer episodes (a noisier figure)")
    parser.add_argument("--checkpoint", help="also practise this policy checkpoint on every node")
    parser.add_argument("--save", metavar="DIR", help="with --checkpoint: save the practised policy here")
    parser.add_argument(
        "--method", choices=("rl", "dpo"), default="rl", help="with --checkpoint: how it practises"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="practice.KEY=VALUE",
        help="with --checkpoint: a Hydra override of the practice settings (repeatable)",
    )
    parser.add_argument("--tasks", type=int, default=200, help="fixed evaluation tasks per skill and kind")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = rows_throughput(64 if args.quick else 128)
    if args.checkpoint:
        rows += rows_checkpoint(
            args.checkpoint, args.tasks, args.save, args.method, overrides=tuple(args.set)
        )
    print(table(["figure", "value", "reference measured in the same run", "ratio"], rows))
    write_json(args.json, {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
