"""How often a run's policy still succeeds under the loop's exploration noise, per node and
temperature: the share of its noisy episodes that can become new data.

    python -m robo_coevolve budget=full seed=2 hydra.run.dir=runs/s2      # any run with a policy
    python benchmarks/policy_noise.py runs/s2 [--tasks 100] [--temperatures 0 0.005 0.01 0.02 0.03]

Every temperature runs the same ``--tasks`` tasks of each node the run reached (drawn from
``--seed``), with the run's noise kind and per-axis scale (``explore.schedule``) and one noise
seed per task, through ``run_policy_episodes`` as the loop runs them. Temperature 0 is the
noise-free reference, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from robo_coevolve.evolve.run_state import RunState  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.closed_loop import PolicyEpisode  # noqa: E402
from robo_coevolve.explore.noise import NoiseSpec  # noqa: E402
from robo_coevolve.policy import VLAPolicy  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--checkpoint", type=Path, help="another checkpoint than the run's latest")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.005, 0.01, 0.02, 0.03])
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    state = RunState.load(args.run_dir)
    if state is None:
        raise SystemExit(f"{args.run_dir} has no completed iteration")
    if any(t < 0 for t in args.temperatures):
        raise SystemExit(f"--temperatures must be >= 0, got {args.temperatures}")
    schedule = state.config["explore"]["schedule"]
    policy = VLAPolicy.from_pretrained(args.checkpoint or args.run_dir / state.checkpoint)
    tree = state.skill_tree()
    nodes = [n for n in tree.nodes if state.nodes.get(n.name, {}).get("best_params") is not None]

    print(
        f"{args.run_dir}: {args.tasks} tasks per node, noise {schedule['noise_kind']} x {schedule['noise_scale']}"
    )
    print("\n| node | " + " | ".join(f"T={t:g}" for t in args.temperatures) + " |")
    print("|---|" + "--:|" * len(args.temperatures))
    with LocalBackend(workers=args.workers, control_hz=float(state.config["env"]["control_hz"])) as backend:
        for node in nodes:
            tasks = node.distribution().sample_many(np.random.default_rng(args.seed), args.tasks)
            rates = []
            for t in args.temperatures:
                noise = NoiseSpec(schedule["noise_kind"], t, schedule["noise_scale"]) if t > 0 else None
                episodes = [PolicyEpisode(task, noise, 1000 + i) for i, task in enumerate(tasks)]
                rates.append(np.mean([tr.success for tr in backend.run_policy(policy, episodes)]))
            print(f"| {node.name} | " + " | ".join(f"{r:.0%}" for r in rates) + " |", flush=True)


if __name__ == "__main__":
    main()
