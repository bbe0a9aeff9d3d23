"""Which answer demonstrates: a state policy cloned from the demonstrations of the answer of a
search on the standard egg, against one cloned from those of a search on 80 g eggs, on the
CoEvolve benchmark's hard set.

    python benchmarks/answer_clone_report.py [--searches standard heavy] [--trials 1500]

For each searched set: a primitive search of ``--trials`` on it (the probe of
``coevolve_report.py``: the same seeds), its answer demonstrates on ``--demos`` fresh tasks of
the *standard* distribution, the refiner (``conf/refine/default.yaml``) keeps its successes, and
a fresh state policy (``conf/policy/state.yaml``) is cloned from them as the loop's first
training clones one (``train.train``: 3,000 steps). The clone then runs without noise on the
hard set's held-out episodes and on the standard set's. The answers themselves run there too.

The policy cannot see an egg's mass, so what it learns is the motion it is shown: this measures
how much of the hard set's gap is which motion demonstrates (README, "Co-evolving the tasks").
About 2 min per searched set on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from coevolve_report import HARD, HELD_OUT_SEED  # noqa: E402

from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.search import PrimitiveSearch, evaluate_params  # noqa: E402
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy  # noqa: E402
from robo_coevolve.policy import PolicyConfig, VLAPolicy  # noqa: E402
from robo_coevolve.refine import Refiner  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402

# The searched sets, and the seed coevolve_report.py's probe gives each one's search.
SEARCHES = {"heavy": ("heavy egg (80 g)", 0), "light": ("light egg (30 g)", 1), "standard": ("standard", 6)}
DEMO_SEED = 123


def success_on_sets(run, episodes: int) -> dict[str, float]:
    """Success of ``run(tasks, n, seed)`` (-> trajectories) on every hard variant's held-out
    episodes and on the standard set's (the seeds of coevolve_report.py)."""
    out = {}
    for i, (name, overrides) in enumerate(HARD.items()):
        trajs = run(TaskDistribution.for_skill("scoop", **overrides), episodes, HELD_OUT_SEED + i)
        out[name] = float(np.mean([t.success for t in trajs]))
    out["hard set"] = float(np.mean(list(out.values())))
    trajs = run(TaskDistribution.for_skill("scoop"), 100, HELD_OUT_SEED - 1)
    out["standard"] = float(np.mean([t.success for t in trajs]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--searches", nargs="+", choices=sorted(SEARCHES), default=["standard", "heavy"])
    ap.add_argument("--trials", type=int, default=1500, help="trials of each primitive search")
    ap.add_argument("--demos", type=int, default=300, help="the answer's demonstrations on standard tasks")
    ap.add_argument("--hard", type=int, default=40, help="episodes per hard variant")
    ap.add_argument("--seed", type=int, default=0, help="the clone's initialisation and batch seed")
    args = ap.parse_args()

    torch.set_num_threads(1)
    refiner = Refiner()  # the main job's settings are the code's defaults
    policy_config = PolicyConfig()
    rows = {}
    with LocalBackend(workers=1) as backend:
        for key in args.searches:
            name, seed = SEARCHES[key]
            start = time.perf_counter()
            overrides = {} if name == "standard" else HARD[name]
            tasks = TaskDistribution.for_skill("scoop", **overrides)
            answer = PrimitiveSearch(tasks, backend, seed=seed).run(args.trials, target=0.9, select_trials=50)
            if answer.best_params is None:
                print(f"{name}: the search found no answer")
                continue
            standard = TaskDistribution.for_skill("scoop")
            shown = evaluate_params(answer.best_params, standard, backend, args.demos, DEMO_SEED)
            segments, _ = refiner.refine([t for t in shown if t.success], None, iteration=1)
            torch.manual_seed(args.seed)
            policy = VLAPolicy(policy_config)
            BCTrainer(policy, TrainConfig(seed=args.seed)).fit(
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
                "answer": success_on_sets(by_answer, args.hard),
                "clone": success_on_sets(by_clone, args.hard),
                "seconds": round(time.perf_counter() - start),
            }
            print(json.dumps({name: rows[name]}), flush=True)
    columns = [*HARD, "hard set", "standard"]
    print("\n| search on | what runs | demos kept | " + " | ".join(columns) + " |")
    print("|---|---|--:|" + "--:|" * len(columns))
    for name, row in rows.items():
        for what in ("answer", "clone"):
            cells = " | ".join(f"{row[what][c]:.1%}" for c in columns)
            print(f"| {name} | {what} | {row['demos'] if what == 'clone' else ''} | {cells} |")


if __name__ == "__main__":
    main()
