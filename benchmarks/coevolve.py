"""Uniform task sampling vs CoEvolve synthesis at the same trial budget, on held-out hard tasks.

    python -m benchmarks.coevolve --out runs/coevolve_report [--iterations 4] [--seeds 0 1]

Each arm runs the evolution loop on scoop (``python -m robo_coevolve``, with
``budget.past_mastery=true`` so that every arm runs all its iterations and spends the same
trials, mastered or not) with the same seed:

- ``uniform``: ``coevolve=off``, exploration tasks from the node's own distribution;
- ``coevolve``: ``coevolve=default``, exploration tasks from the co-evolving task pool (its
  validation trials come out of the same per-iteration trial budget);
- ``adversarial`` (optional): ``coevolve=adversarial``, co-evolution plus the task adversary;
- ``coevolve_no_novelty`` / ``uniform_no_novelty`` (optional): the same with the refiner's novelty
  gate off (``refine.novelty.min_distance=0 refine.novelty.penalty=0``), for the library's
  diversity without diversity pressure.

Then each arm's final policy runs without noise on a **hard set** of task variants it never
trained on (heavier and lighter eggs, lower friction, off-centre eggs; ``evaluation.HARD``), ``--hard``
episodes each, and on ``--standard`` tasks of the node's own distribution, all drawn from a seed
the loops never used. Printed: success per arm on each, trials spent, and the library's diversity
(mean pairwise feature distance of stored segments, ``refine.novelty.mean_pairwise_distance``)
after each iteration. Arms already run in ``--out`` are reused, so the command resumes.

Synthesis trials beyond an iteration's share (an answer search's, ``coevolve=adversarial``) are
not cut, so such an arm may spend more trials in its iterations than uniform sampling does in
as many. ``--match ARM`` runs ARM first on each seed, then every other arm on the same seed
until it has spent exactly as many trials (``budget.trials``, up to 3x ``--iterations``).

With ``--probe N``, each hard variant first gets a primitive search of its own (``N`` trials,
the loop's search settings) whose answer runs on the variant's held-out episodes: the proof that
every variant is solvable, and how far a method that knew the variant gets. The standard
distribution gets one too, and every answer also runs on every other set: which variant's motion
carries over to the others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.evaluation import HARD, STANDARD, load_run, rate, scoop_set, seeds, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PrimitiveSearch, evaluate_params
from robo_coevolve.learn import evaluate_policy
from robo_coevolve.library import SkillLibrary
from robo_coevolve.refine.novelty import mean_pairwise_distance

ARMS = {
    "uniform": ["coevolve=off"],
    "coevolve": ["coevolve=default"],
    "adversarial": ["coevolve=adversarial"],
    "uniform_no_novelty": ["coevolve=off", "refine.novelty.min_distance=0", "refine.novelty.penalty=0"],
    "coevolve_no_novelty": ["coevolve=default", "refine.novelty.min_distance=0", "refine.novelty.penalty=0"],
}


def loop_overrides(args) -> list[str]:
    return [
        "budget.until=[scoop]",
        f"budget.iterations={args.iterations}",
        "budget.past_mastery=true",  # every iteration runs, mastered or not
        f"skill_tree.nodes.scoop.eval_tasks={args.loop_eval}",
        f"explore.schedule.trials={args.trials}",
        f"explore.budget={args.search}",
        f"explore.backend.workers={args.workers}",
        "workspace.video.every=0",
        *args.extra,
    ]


def run_arm(run_dir: Path, arm: str, seed: int, args, trials: int | None = None) -> float:
    """Run (or resume) one arm's loop, until ``trials`` trials when given; returns its wall time
    in s (0 when it was already done)."""
    if (run_dir / "summary.json").is_file():
        return 0.0
    cmd = [
        sys.executable,
        "-m",
        "robo_coevolve",
        f"hydra.run.dir={run_dir}",
        f"seed={seed}",
        *ARMS[arm],
        *loop_overrides(args),
    ]
    if trials is not None:
        cmd += [f"budget.trials={trials}", f"budget.iterations={3 * args.iterations}"]
    print("$", " ".join(cmd[1:]), flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def diversity_curve(run_dir: Path) -> list[float]:
    """Mean pairwise distance of the scoop library's segments after each iteration."""
    meta = SkillLibrary(run_dir / "library", create=False).metadata("scoop")
    its = np.array([m["meta"].get("iteration", 0) for m in meta])
    feats = np.array([m["meta"]["features"] for m in meta])
    return [mean_pairwise_distance(feats[its <= k]) for k in range(1, int(its.max()) + 1)]


def probe(backend, args) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """A primitive search of its own on each hard variant and on the standard distribution, and
    each search's answer run on the held-out episodes of every one of them. Returns (per hard
    variant: its own answer's success there; per answer: its success on each set)."""
    sets = [*HARD, STANDARD]
    answers = {}
    for i, name in enumerate(sets):
        answers[name] = PrimitiveSearch(scoop_set(name), backend, seed=i).run(
            args.probe, target=0.9, select_trials=50
        )
    cross: dict[str, dict[str, float]] = {}
    for name, result in answers.items():
        cross[name] = {}
        for i, target in enumerate(sets):
            trajs = evaluate_params(
                result.best_params, scoop_set(target), backend, args.hard, seed=seeds.HARD_SET + i
            )
            cross[name][target] = rate(trajs)
        print(f"probe {name}: a search of its own reaches {cross[name][name]:.0%}", flush=True)
    return {v: cross[v][v] for v in HARD}, cross


def evaluate_arm(run_dir: Path, backend, args) -> dict:
    run = load_run(run_dir)
    state, rows = run.state, run.metrics
    policy = run.policy()
    hard = {
        name: evaluate_policy(
            policy, scoop_set(name), backend, args.hard, seed=seeds.HARD_SET + i
        ).success_rate
        for i, name in enumerate(HARD)
    }
    standard = evaluate_policy(
        policy, scoop_set(STANDARD), backend, args.standard, seed=seeds.HARD_SET - 1
    ).success_rate
    last = rows[-1]["explore"].get("coevolve", {})
    return {
        "hard": float(np.mean(list(hard.values()))),
        "hard_variants": hard,
        "standard": standard,
        "trials": state.trials,
        "iterations": state.iteration,
        "loop_success": [r["success"].get("scoop") for r in rows],
        "diversity": diversity_curve(run_dir),
        "library": state.library.get("scoop", 0),
        "pool": last.get("pool"),
        "elapsed_s": state.elapsed_s,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.coevolve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/coevolve_report"))
    ap.add_argument("--arms", nargs="+", default=["uniform", "coevolve"], choices=sorted(ARMS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--iterations", type=int, default=4, help="loop iterations (the first is the search)")
    ap.add_argument("--trials", type=int, default=300, help="trials per iteration after the search")
    ap.add_argument("--search", type=int, default=1000, help="the first iteration's search budget")
    ap.add_argument("--loop-eval", type=int, default=50, help="the loop's own held-out tasks")
    ap.add_argument("--hard", type=int, default=40, help="episodes per hard variant")
    ap.add_argument("--standard", type=int, default=200, help="episodes on the standard distribution")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument(
        "--probe", type=int, default=0, help="trials of a primitive search per hard variant (0: none)"
    )
    ap.add_argument("--extra", nargs="*", default=[], help="further loop overrides for every arm")
    ap.add_argument(
        "--match", choices=sorted(ARMS), help="run this arm first; the others until they spent its trials"
    )
    args = ap.parse_args(argv)
    if args.match and args.match not in args.arms:
        ap.error(f"--match {args.match} is not one of --arms {' '.join(args.arms)}: add it there")
    arms = sorted(args.arms, key=lambda a: a != args.match)  # the matched arm first
    torch.set_num_threads(1)
    results: dict[str, dict[int, dict]] = {}
    probed, cross = {}, {}
    if args.probe:
        with LocalBackend(workers=args.workers) as backend:
            probed, cross = probe(backend, args)
    for seed in args.seeds:
        for arm in arms:
            trials = None if args.match in (None, arm) else results[args.match][seed]["trials"]
            name = arm if trials is None else f"{arm}_{trials}trials"
            run_dir = args.out / f"{name}_seed{seed}"
            wall = run_arm(run_dir, arm, seed, args, trials)
            cache = run_dir / "report.json"
            res = json.loads(cache.read_text()) if cache.is_file() else {}
            if set(res.get("hard_variants", ())) != set(HARD) or res.get("hard_episodes") != args.hard:
                # First evaluation, or one of another hard set: (re-)evaluate.
                with LocalBackend(workers=args.workers) as backend:
                    new = evaluate_arm(run_dir, backend, args)
                res = {**new, "hard_episodes": args.hard, "wall_s": res.get("wall_s") or wall}
                write_json(cache, res)
            results.setdefault(arm, {})[seed] = res
            print(
                f"{arm} seed {seed}, {res['iterations']} iterations: hard {res['hard']:.1%} standard {res['standard']:.1%} "
                f"trials {res['trials']:,} diversity {[round(d, 3) for d in res['diversity']]}",
                flush=True,
            )
    n_hard = args.hard * len(HARD)
    print(
        f"\nscoop, {args.iterations} iterations, seeds {args.seeds}; hard set {n_hard} episodes per seed "
        f"({len(HARD)} variants x {args.hard}), standard set {args.standard}\n"
    )
    lines = []
    for arm, by_seed in results.items():
        rs = list(by_seed.values())
        per = [np.mean([r["hard_variants"][v] for r in rs]) for v in HARD]
        n = min(len(r["diversity"]) for r in rs)  # matched arms may run more iterations
        div = np.mean([r["diversity"][:n] for r in rs], axis=0)
        lines.append(
            [arm, f"{np.mean([r['trials'] for r in rs]):,.0f}", f"{np.mean([r['hard'] for r in rs]):.1%}"]
            + [f"{np.mean([r['standard'] for r in rs]):.1%}", *(f"{p:.0%}" for p in per)]
            + [f"{np.mean([r['library'] for r in rs]):.0f}", " ".join(f"{d:.3f}" for d in div)]
        )
    if probed:
        lines.append(
            [f"a primitive search on each variant alone ({args.probe:,} trials each)", ""]
            + [f"{np.mean(list(probed.values())):.1%}", "", *(f"{probed[v]:.0%}" for v in HARD), "", ""]
        )
    columns = ["arm", "trials", "hard set", "standard set", *HARD, "library", "diversity by iteration"]
    print(table(columns, lines))
    if probed:
        results["probe"] = probed
        sets = [*HARD, STANDARD]
        print("\nEach search's answer (rows) run on every set's held-out episodes (columns):\n")
        lines = [
            [name, *(f"{row[v]:.0%}" for v in sets), f"{np.mean([row[v] for v in HARD]):.1%}"]
            for name, row in cross.items()
        ]
        print(table(["the answer of a search on", *sets, "mean of the hard set"], lines))
        results["probe_cross"] = cross
    write_json(args.out / "report.json", results)


if __name__ == "__main__":
    main()
