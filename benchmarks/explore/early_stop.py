"""Early stopping of hopeless trials: physics steps per success found, with and without.

For each skill, motion primitives with parameters drawn uniformly from the unit cube (how a skill
is bootstrapped from nothing, where most trials fail) run on tasks of the skill's distribution:
``--trials`` past trials to train on, and as many fresh ones (other seeds) to judge. A value model
(``explore.value_model``) learns to predict success from a trial's first ``prefix`` seconds; its
threshold is calibrated by cross-fitting on the past trials (``--folds``) to cut at most
``--cut-rate`` of their successes. Printed per skill and prefix: physics steps per success found
without and with the cut, the ratio, how many of the fresh trials' true successes it cut, and the
oracle's ratio (every failure and no success cut at the first checkpoint: the most early stopping
can save there).

With ``--select 0.2 0.3 ...``, each skill also gets the checkpoint ``EarlyStop.select`` chooses
among those on the past trials alone (by its out-of-fold estimate), judged on the fresh ones like
the rest: the figure to trust, since picking the best ``--prefix`` row reads the fresh trials.

With ``--source search`` the past and fresh trials are instead two mixture-CEM searches with
different seeds (whose modes differ: a distribution shift the model is not trained for).

    python -m benchmarks.explore early-stop [--skills scoop flip] [--trials 1500] [--prefix 0.3 0.6 1.0]
        [--select 0.2 0.3 0.4 0.5 0.6 1.0]
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.evaluation import write_json
from robo_coevolve.explore import primitives
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.explore.value_model import EarlyStop, physics_cost
from robo_coevolve.task_distribution import TaskDistribution


def search_trials(skill: str, backend, trials: int, seed: int) -> list:
    out = []
    PrimitiveSearch(TaskDistribution.for_skill(skill), backend, seed=seed, keep_successes=False).run(
        trials, on_generation=lambda _, trajs: out.extend(trajs)
    )
    return out


def uniform_trials(skill: str, backend, trials: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    tasks = TaskDistribution.for_skill(skill).sample_many(rng, trials)
    params = rng.uniform(0.0, 1.0, size=(trials, primitives.dim()))
    return backend.run_trials([Trial(t, PrimitivePlan(p)) for t, p in zip(tasks, params, strict=True)])


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--skills", nargs="+", default=["scoop", "flip"])
    ap.add_argument("--trials", type=int, default=1500, help="per search (training and test)")
    ap.add_argument(
        "--prefix",
        nargs="+",
        default=["0.3", "0.6", "1.0", "0.5,1.0,1.5,2.0"],
        help="checkpoints in s; a comma-separated list is one cascade (cut at the first failing one)",
    )
    ap.add_argument("--cut-rate", type=float, default=0.03)
    ap.add_argument(
        "--select",
        type=float,
        nargs="*",
        default=[],
        help="candidate checkpoints (s) to choose one from on the past trials",
    )
    ap.add_argument("--folds", type=int, default=5, help="cross-fitting folds per checkpoint")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--source", choices=["uniform", "search"], default="uniform")
    ap.add_argument("--cache", type=Path, default=None, help="keep the simulated trials here for reruns")
    ap.add_argument("--json", default=None, help="also write the rows here")


def run(args: argparse.Namespace) -> None:
    np.set_printoptions(precision=3)
    torch.set_num_threads(1)
    rows = []
    with LocalBackend(workers=args.workers) as backend:
        substeps = backend._simulator().env_for(TaskDistribution.for_skill("scoop").base).substeps
        for skill in args.skills:
            start = time.perf_counter()
            make = uniform_trials if args.source == "uniform" else search_trials
            cache = None if args.cache is None else args.cache / f"{skill}_{args.source}_{args.trials}.pkl"
            if cache is not None and cache.is_file():
                train, test = pickle.loads(cache.read_bytes())
            else:
                train = make(skill, backend, args.trials, seed=1)
                test = make(skill, backend, args.trials, seed=2)
                if cache is not None:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    cache.write_bytes(pickle.dumps((train, test)))
            sim_s = time.perf_counter() - start
            base = physics_cost(test, substeps)
            rate = test[0].control_hz
            judges = []
            for prefix in args.prefix:
                steps = [int(round(float(p) * rate)) for p in prefix.split(",")]
                judges.append(
                    (prefix, EarlyStop.train(train, steps, args.cut_rate, seed=0, folds=args.folds))
                )
            if args.select:
                candidates = [int(round(p * rate)) for p in args.select]
                stop, estimates = EarlyStop.select(train, candidates, substeps, args.cut_rate, 0, args.folds)
                chosen = f"{stop.checkpoints[0] / rate:g}"
                print(
                    f"{skill}: estimated ratios { ({f'{c / rate:g}': round(r, 2) for c, r in estimates.items()}) }"
                )
                judges.append((f"{chosen} (chosen)", stop))
            for label, stop in judges:
                stops = stop.stops(test)
                with_cut = physics_cost(test, substeps, stops)
                wins = max(1, base["successes"])
                # the bound: every failure, and no success, cut at the first checkpoint
                first = stop.checkpoints[0]
                oracle = [first if not t.success and len(t) > first else -1 for t in test]
                oracle_cost = physics_cost(test, substeps, np.array(oracle))
                row = {
                    "skill": skill,
                    "source": args.source,
                    "prefix_s": label,
                    "mean_cut_s": float(np.mean([c for c in stops if c >= 0] or [0]) / rate),
                    "trials": len(test),
                    "test_success": base["successes"] / len(test),
                    "steps_per_success_without": base["steps_per_success"],
                    "steps_per_success_with": with_cut["steps_per_success"],
                    "ratio": base["steps_per_success"] / with_cut["steps_per_success"],
                    "oracle_ratio": base["steps_per_success"] / oracle_cost["steps_per_success"],
                    "cut": with_cut["cut"],
                    "cut_successes": with_cut["cut_successes"],
                    "cut_success_share": with_cut["cut_successes"] / wins,
                    "thresholds": stop.thresholds,
                    "simulation_s": sim_s,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print(
        f"{'skill':6} {'checkpoints s':>15} {'success':>8} {'steps/success':>14} {'with cut':>9} {'ratio':>6} "
        f"{'cut':>5} {'successes cut':>14} {'oracle':>7}"
    )
    for r in rows:
        print(
            f"{r['skill']:6} {r['prefix_s']:>15} {r['test_success']:8.0%} "
            f"{r['steps_per_success_without']:14,.0f} {r['steps_per_success_with']:9,.0f} "
            f"{r['ratio']:5.2f}x {r['cut']:5d} {r['cut_successes']:5d} ({r['cut_success_share']:.1%}) {r['oracle_ratio']:6.2f}x"
        )
    write_json(args.json, rows)
