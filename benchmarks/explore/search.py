"""From zero demonstrations to successes: primitive search against random baselines, per skill.

For each skill and seed, ``PrimitiveSearch`` (mixture CEM over motion primitives) runs up to
``--budget`` trials on tasks drawn from the skill's distribution (egg pose +-2 cm, mass +-20%),
success judged by the physics scorer (integrity included). Reported:

- the success rate of the search's own trials per block of 500 (exploration included);
- the trials until the first success;
- **held-out success**: the search's answer run without noise on ``--eval`` fresh tasks, and the
  best of all its modes on the same tasks. The answer is the mode that succeeded most often on
  ``--select`` fresh tasks each, trials kept back from the budget for the purpose;
- the modes' wrist-roll signs (flip is solved rolling either way);
- with ``--demos`` (the loop's 300, with ``--target 0.9``), each answer's demonstration success,
  and what keeping the best-demonstrating of k searches gives (``explore.restarts``): the mean and
  worst held-out success of that pick over every k-subset of the seeds;
- with ``--polish``, each answer is polished with ``explore.polish`` from
  ``conf/explore/primitives.yaml`` (``explore.search.PolishConfig``), and the answer before polishing
  runs on the same held-out tasks as the one kept.

Baselines on the same task distribution, ``--baseline`` trials each: random smooth noise (pink
noise around the start pose, no primitives) at two temperatures, the primitives' prior (uniform
random parameters, i.e. the search's first generation forever), and the random-init MLP policy
with pink noise (closed loop).

    python -m benchmarks.explore search [--skills scoop flip catch] [--seeds 0 1] [--budget 3000]
    python -m benchmarks.explore search --skills catch --seeds 1000 1001 1002 1003 1004 1005 1006 1007 \
        --target 0.9 --demos 300 --eval 400 --baseline 0    # restarts: best of k by demonstrations
    python -m benchmarks.explore search --skills catch --seeds 1000 1001 1002 1003 1004 1005 1006 1007 \
        --target 0.9 --demos 300 --eval 400 --baseline 0 --polish   # the same answers, polished
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import time
from datetime import UTC, datetime

import mujoco
import numpy as np

from robo_coevolve.evaluation import rate, seeds, table, write_json
from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import policy_episodes
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.open_loop import Trial, noise_trials
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.random_policy import RandomMLPPolicy
from robo_coevolve.explore.search import PolishConfig, PrimitiveSearch, evaluate_params
from robo_coevolve.task_distribution import TaskDistribution

ROLL = primitives.NAMES.index("toss_roll")


def search_figures(skill, seed, budget, n_eval, select, backend, target=None, demos=0, polish=None) -> dict:
    tasks = TaskDistribution.for_skill(skill)
    start = time.perf_counter()
    outcomes: list[bool] = []
    result = PrimitiveSearch(tasks, backend, seed=seed, population=100).run(
        budget,
        target=target,
        on_generation=lambda gen, trajs: outcomes.extend(t.success for t in trajs),
        select_trials=select,
        demos=demos,
        polish=polish,
    )
    seconds = time.perf_counter() - start
    first = next((i + 1 for i, s in enumerate(outcomes) if s), None)
    blocks = [float(np.mean(outcomes[i : i + 500])) for i in range(0, len(outcomes), 500)]
    held_out = rate(evaluate_params(result.best_params, tasks, backend, n_eval, seed=seeds.SEARCH + seed))
    per_mode = [
        rate(evaluate_params(m, tasks, backend, n_eval, seed=seeds.SEARCH + seed)) for m in result.modes
    ]
    family = primitives.family(skill)  # the place family has no wrist roll: no rolls to report
    rolls = (
        [float(family.physical(m)["toss_roll"]) for m in result.modes] if "toss_roll" in family.names else []
    )
    unpolished = held_out
    if result.polish is not None and "answer" in result.polish:
        answer = np.asarray(result.polish["answer"])
        unpolished = rate(evaluate_params(answer, tasks, backend, n_eval, seed=seeds.SEARCH + seed))
    return {
        "skill": skill,
        "seed": seed,
        "trials": result.trials,
        "seconds": seconds,
        "first_success": first,
        "blocks_of_500": blocks,
        "last_generation": result.success_rate,
        "held_out": held_out,
        "best_mode_held_out": max(per_mode, default=0.0),
        "mode_rolls": rolls,
        "selection": result.selection,
        "demo_success": result.demo_success,
        "polish": result.polish,
        "held_out_before_polish": unpolished,
    }


def best_of(searches: list[dict], k: int) -> tuple[float, float, int]:
    """Keep the best-demonstrating of every k of these searches: mean and worst held-out success
    of the kept answer, and in how many k-subsets it was also the best held out."""
    picked, right = [], 0
    for group in itertools.combinations(searches, k):
        kept = max(group, key=lambda s: s["demo_success"])
        picked.append(kept["held_out"])
        right += kept["held_out"] == max(s["held_out"] for s in group)
    return float(np.mean(picked)), float(min(picked)), right


def baseline_figures(skill, n, backend) -> dict:
    tasks = TaskDistribution.for_skill(skill)
    rng = np.random.default_rng(seeds.BASELINE)
    out = {"skill": skill, "trials": n}
    for temperature in (0.1, 0.3):
        trials = noise_trials(tasks, n, NoiseSpec("pink", temperature), rng)
        out[f"noise T={temperature}"] = rate(backend.run_trials(trials))
    params = primitives.family(skill).sample(rng, n)
    out["random primitives"] = rate(
        backend.run_trials(
            [Trial(t, PrimitivePlan(p)) for t, p in zip(tasks.sample_many(rng, n), params, strict=True)]
        )
    )
    n_policy = max(1, n // 5)
    episodes = policy_episodes(tasks, n_policy, NoiseSpec("pink", 0.2), rng)
    out["random-init policy"] = rate(backend.run_policy(RandomMLPPolicy(seed=0), episodes))
    out["policy episodes"] = n_policy
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skills", nargs="+", default=["scoop", "flip", "catch"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--budget", type=int, default=3000, help="trials per search")
    parser.add_argument("--eval", type=int, default=200, help="held-out tasks per evaluation")
    parser.add_argument(
        "--select", type=int, default=50, help="trials per mode (of the budget) to pick the answer"
    )
    parser.add_argument("--target", type=float, default=None, help="stop early at this success (loop: 0.9)")
    parser.add_argument("--demos", type=int, default=0, help="the answer's demonstrations (loop: 300)")
    parser.add_argument("--baseline", type=int, default=1000, help="trials per baseline (0: none)")
    parser.add_argument("--polish", action="store_true", help="polish each answer (explore.polish)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--json", help="also write the figures to this file")


def run(args: argparse.Namespace) -> None:

    polish = None
    if args.polish:
        polish = PolishConfig()  # the main job's
    searches, baselines = [], []
    with LocalBackend(workers=args.workers) as backend:
        for skill in args.skills:
            for seed in args.seeds:
                searches.append(
                    search_figures(
                        skill,
                        seed,
                        args.budget,
                        args.eval,
                        args.select,
                        backend,
                        args.target,
                        args.demos,
                        polish,
                    )
                )
                s = searches[-1]
                print(
                    f"{skill} seed {seed}: held-out {s['held_out']:.1%} after {s['trials']} trials ({s['seconds']:.0f} s)"
                )
            if args.baseline:
                baselines.append(baseline_figures(skill, args.baseline, backend))

    print(
        f"\nPrimitive search, budget {args.budget} trials, held-out = {args.eval} fresh tasks without noise"
    )
    columns = ["skill", "seed", "first success (trial)", "search success per 500 trials", "held-out, answer"]
    columns += ["held-out, best mode", "mode rolls (rad)", "wall"]
    lines = [
        [s["skill"], s["seed"], s["first_success"], " ".join(f"{b:.0%}" for b in s["blocks_of_500"])]
        + [
            f"{s['held_out']:.1%}",
            f"{s['best_mode_held_out']:.1%}",
            " ".join(f"{r:+.1f}" for r in s["mode_rolls"]),
        ]
        + [f"{s['seconds']:.0f} s"]
        for s in searches
    ]
    print(table(columns, lines))
    if args.demos:
        print(f"\nKeeping the best-demonstrating of k searches ({args.demos} demonstrations each)")
        lines = []
        for skill in args.skills:
            mine = [s for s in searches if s["skill"] == skill]
            demos = " ".join(f"{s['demo_success']:.1%}" for s in mine)
            for k in range(1, min(3, len(mine)) + 1):
                mean, worst, right = best_of(mine, k)
                lines.append(
                    [skill, demos, k, f"{mean:.1%}", f"{worst:.1%}", f"{right} of {math.comb(len(mine), k)}"]
                )
        columns = ["skill", "searches' demo success", "k", "held-out of the kept answer: mean", "worst"]
        print(table([*columns, "also best held out"], lines, left=2))
    if polish is not None:
        print(f"\nPolished answers ({polish.trials} trials, {polish.tasks} shared tasks per candidate)")
        lines = []
        for s in searches:
            p = s["polish"] or {}
            check = " / ".join(f"{c:.1%}" for c in p.get("check", [])) or p.get("skipped", "-")
            lines.append(
                [s["skill"], s["seed"], f"{s['held_out_before_polish']:.1%}", f"{s['held_out']:.1%}", check]
                + [p.get("adopted", False)]
            )
        columns = ["skill", "seed", "held-out before", "held-out kept", "check: answer / polished", "adopted"]
        print(table(columns, lines))
        polished = [s for s in searches if s["polish"] and "answer" in s["polish"]]
        if polished:
            before = np.mean([s["held_out_before_polish"] for s in polished])
            after = np.mean([s["held_out"] for s in polished])
            print(f"mean over {len(polished)} polished searches: {before:.1%} -> {after:.1%}")
    if baselines:
        episodes = baselines[0]["policy episodes"]
        print(f"\nBaselines, {args.baseline} trials each (random-init policy: {episodes} episodes)")
        arms = ["noise T=0.1", "noise T=0.3", "random primitives", "random-init policy"]
        lines = [[b["skill"], *(f"{b[arm]:.1%}" for arm in arms)] for b in baselines]
        columns = ["skill", "smooth noise T=0.1", "smooth noise T=0.3", "random primitives"]
        print(table([*columns, "random-init policy + noise"], lines))
    machine = f"{platform.machine()}, {os.cpu_count()} cores, mujoco {mujoco.__version__}"
    print(f"\n{machine}; {datetime.now(UTC):%Y-%m-%d %H:%M UTC}")
    write_json(args.json, {"searches": searches, "baselines": baselines, "machine": machine})
