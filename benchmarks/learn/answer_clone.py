"""Which answer demonstrates: a state policy cloned from the demonstrations of the answer of a
search on the standard egg, against one cloned from those of a search on 80 g eggs, on the
CoEvolve benchmark's hard set.

    python -m benchmarks.learn answer-clone [--searches standard heavy] [--trials 1500]

For each searched set: a primitive search of ``--trials`` on it (the probe of
``benchmarks.coevolve``: the same seeds), its answer demonstrates on ``--demos`` fresh tasks of
the *standard* distribution, the refiner (``conf/refine/default.yaml``) keeps its successes, and
a fresh state policy (``conf/policy/state.yaml``) is cloned from them as the loop's first
training clones one (``TrainConfig``'s steps, or ``--steps``). The clone then runs without noise on the
hard set's held-out episodes and on the standard set's. The answers themselves run there too.

The policy cannot see an egg's mass, so what it learns is the motion it is shown: this measures
how much of the hard set's gap is which motion demonstrates.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from robo_coevolve.evaluation import HARD, STANDARD, rate, scoop_set, seeds, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PrimitiveSearch, evaluate_params
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.refine import Refiner

# The searched sets, and the seed benchmarks.coevolve's probe gives each one's search.
SEARCHES = {"heavy": ("heavy egg (80 g)", 0), "light": ("light egg (30 g)", 1), STANDARD: (STANDARD, 6)}


def success_on_sets(run, episodes: int, standard: int) -> dict[str, float]:
    """Success of ``run(tasks, n, seed)`` (-> trajectories) on every hard variant's held-out
    episodes and on the standard set's (the seeds of benchmarks.coevolve)."""
    out = {name: rate(run(scoop_set(name), episodes, seeds.HARD_SET + i)) for i, name in enumerate(HARD)}
    out["hard set"] = float(np.mean(list(out.values())))
    out[STANDARD] = rate(run(scoop_set(STANDARD), standard, seeds.HARD_SET - 1))
    return out


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--searches", nargs="+", choices=sorted(SEARCHES), default=["standard", "heavy"])
    ap.add_argument("--trials", type=int, default=1500, help="trials of each primitive search")
    ap.add_argument("--demos", type=int, default=300, help="the answer's demonstrations on standard tasks")
    ap.add_argument("--hard", type=int, default=40, help="episodes per hard variant")
    ap.add_argument("--standard", type=int, default=100, help="episodes on the standard set")
    ap.add_argument("--seed", type=int, default=0, help="the clone's initialisation and batch seed")
    ap.add_argument("--steps", type=int, default=TrainConfig().steps, help="the clone's training steps")
    ap.add_argument("--json", help="also write the rows here")


def run(args: argparse.Namespace) -> None:

    torch.set_num_threads(1)
    refiner = Refiner()  # the main job's settings are the code's defaults
    policy_config = PolicyConfig()
    rows = {}
    with LocalBackend(workers=1) as backend:
        for key in args.searches:
            name, seed = SEARCHES[key]
            start = time.perf_counter()
            tasks = scoop_set(name)
            answer = PrimitiveSearch(tasks, backend, seed=seed).run(args.trials, target=0.9, select_trials=50)
            if answer.best_params is None:
                print(f"{name}: the search found no answer")
                continue
            shown = evaluate_params(answer.best_params, scoop_set(STANDARD), backend, args.demos, seeds.DEMOS)
            segments, _ = refiner.refine([t for t in shown if t.success], None, iteration=1)
            if not segments:
                print(f"{name}: the refiner kept none of its answer's {len(shown)} demonstrations")
                continue
            torch.manual_seed(args.seed)
            policy = VLAPolicy(policy_config)
            BCTrainer(policy, TrainConfig(seed=args.seed, steps=args.steps)).fit(
                ChunkDataset.from_segments(segments, policy_config.chunk)
            )
            params = answer.best_params

            def by_answer(t, n, s, params=params):
                return evaluate_params(params, t, backend, n, s)

            def by_clone(t, n, s, policy=policy):
                return evaluate_policy(policy, t, backend, n, seed=s).trajectories

            rows[name] = {
                "demos": f"{sum(t.success for t in shown)} / {len(shown)}",
                "segments": len(segments),
                "answer": success_on_sets(by_answer, args.hard, args.standard),
                "clone": success_on_sets(by_clone, args.hard, args.standard),
                "seconds": round(time.perf_counter() - start),
            }
            print(json.dumps({name: rows[name]}), flush=True)
    columns = [*HARD, "hard set", STANDARD]
    lines = [
        [name, what, row["demos"] if what == "clone" else "", *(f"{row[what][c]:.1%}" for c in columns)]
        for name, row in rows.items()
        for what in ("answer", "clone")
    ]
    print("\n" + table(["search on", "what runs", "demos kept", *columns], lines, left=2))
    write_json(args.json, rows)
