"""Early stopping of hopeless trials: physics steps per success found, with and without.

For each skill, two primitive searches from zero demonstrations (mixture CEM, different seeds)
produce every trial of their budgets. A value model (``explore.value_model``) is trained on the
first search's trials to predict success from a trial's first ``prefix`` seconds, with its
threshold calibrated to cut at most ``--cut-rate`` of the training successes; it then judges the
second search's trials, which it has never seen. Printed per skill and prefix: physics steps per
success found without and with the cut, the ratio, and how many true successes it cut.

    python benchmarks/early_stop_report.py [--skills scoop flip] [--trials 1500] [--prefix 0.3 0.6 1.0]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.explore.value_model import EarlyStop, physics_cost
from robo_coevolve.task_distribution import TaskDistribution


def search_trials(skill: str, backend, trials: int, seed: int) -> list:
    out = []
    PrimitiveSearch(TaskDistribution.for_skill(skill), backend, seed=seed, keep_successes=False).run(
        trials, on_generation=lambda _, trajs: out.extend(trajs)
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--skills", nargs="+", default=["scoop", "flip"])
    ap.add_argument("--trials", type=int, default=1500, help="per search (training and test)")
    ap.add_argument("--prefix", type=float, nargs="+", default=[0.3, 0.6, 1.0], help="s")
    ap.add_argument("--cut-rate", type=float, default=0.03)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    with LocalBackend(workers=args.workers) as backend:
        substeps = backend._simulator().env_for(TaskDistribution.for_skill("scoop").base).substeps
        for skill in args.skills:
            start = time.perf_counter()
            train = search_trials(skill, backend, args.trials, seed=1)
            test = search_trials(skill, backend, args.trials, seed=2)
            sim_s = time.perf_counter() - start
            base = physics_cost(test, substeps)
            for prefix in args.prefix:
                steps = int(round(prefix * test[0].control_hz))
                stop = EarlyStop.train(train, steps, cut_rate=args.cut_rate, seed=0)
                with_cut = physics_cost(test, substeps, stop.cuts(test), steps)
                wins = max(1, base["successes"])
                row = {
                    "skill": skill,
                    "prefix_s": prefix,
                    "trials": len(test),
                    "test_success": base["successes"] / len(test),
                    "steps_per_success_without": base["steps_per_success"],
                    "steps_per_success_with": with_cut["steps_per_success"],
                    "ratio": base["steps_per_success"] / with_cut["steps_per_success"],
                    "cut": with_cut["cut"],
                    "cut_successes": with_cut["cut_successes"],
                    "cut_success_share": with_cut["cut_successes"] / wins,
                    "threshold": stop.threshold,
                    "simulation_s": sim_s,
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print(
        f"{'skill':6} {'prefix':>6} {'success':>8} {'steps/success':>14} {'with cut':>9} {'ratio':>6} "
        f"{'cut':>5} {'successes cut':>14}"
    )
    for r in rows:
        print(
            f"{r['skill']:6} {r['prefix_s']:5.1f}s {r['test_success']:8.0%} "
            f"{r['steps_per_success_without']:14,.0f} {r['steps_per_success_with']:9,.0f} "
            f"{r['ratio']:5.2f}x {r['cut']:5d} {r['cut_successes']:5d} ({r['cut_success_share']:.1%})"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
