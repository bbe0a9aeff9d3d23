"""How often the egg-flip simulation diverges under random actions, per skill and egg mass.

For every skill and egg mass, ``--episodes`` episodes of ``EggFlipEnv(task=TaskSpec.for_skill(skill)
.replace(egg_mass=m))``, each reset with its own seed and stepped (up to ``--steps`` control steps,
or until the episode ends) with clipped Gaussian actions (``--std`` around the centre of the
action space), the same draw for every mass. An episode counts as diverged when the env says so
(``info["diverged"]``: non-finite state or a MuJoCo instability warning). The target is 0 in
every cell. The first diverged episodes are listed with their seed and step, to reproduce them.

    python benchmarks/divergence.py [--episodes 1000] [--masses 20 30 40 50 60 75 100] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from robo_coevolve import SKILLS  # noqa: E402
from robo_coevolve.env.egg_flip import EggFlipEnv  # noqa: E402
from robo_coevolve.task_spec import TaskSpec  # noqa: E402


def run_cell(skill: str, mass: float, episodes: int, steps: int, std: float) -> dict:
    """Random-action episodes of one skill at one egg mass (kg): divergences and physics steps."""
    env = EggFlipEnv(task=TaskSpec.for_skill(skill).replace(egg_mass=mass))
    diverged, physics_steps = [], 0
    start = time.perf_counter()
    for seed in range(episodes):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        for t in range(steps):
            _, _, terminated, truncated, info = env.step(np.clip(rng.normal(0.0, std, 5), -1.0, 1.0))
            physics_steps += env.substeps
            if info["diverged"]:
                diverged.append((seed, t))
            if terminated or truncated:
                break
    env.close()
    return {
        "skill": skill,
        "mass_g": round(mass * 1e3, 3),
        "episodes": episodes,
        "diverged": len(diverged),
        "first_diverged": diverged[:5],
        "physics_steps": physics_steps,
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=1000, help="per skill and mass")
    parser.add_argument("--masses", type=float, nargs="+", default=[20, 30, 40, 50, 60, 75, 100], help="g")
    parser.add_argument("--skills", nargs="+", default=list(SKILLS), choices=SKILLS)
    parser.add_argument("--steps", type=int, default=150, help="control steps per episode at most")
    parser.add_argument("--std", type=float, default=0.3, help="action noise, in action units")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.episodes < 1 or args.steps < 1:
        parser.error("--episodes and --steps must be at least 1")

    cells = []
    for skill in args.skills:
        for grams in args.masses:
            cells.append(run_cell(skill, grams / 1e3, args.episodes, args.steps, args.std))
            c = cells[-1]
            print(
                f"  {skill} {grams:g} g: {c['diverged']}/{c['episodes']} diverged ({c['seconds']:.0f} s)",
                flush=True,
            )

    print(
        f"\nMachine: {platform.processor() or platform.machine()}, nproc {os.cpu_count()}, "
        f"mujoco {mujoco.__version__}; {args.episodes} episodes per cell, <= {args.steps} control "
        f"steps, action std {args.std}\n"
    )
    print("| skill | " + " | ".join(f"{g:g} g" for g in args.masses) + " | physics steps/s |")
    print("|---|" + "--:|" * (len(args.masses) + 1))
    for skill in args.skills:
        row = [c for c in cells if c["skill"] == skill]
        rate = sum(c["physics_steps"] for c in row) / sum(c["seconds"] for c in row)
        print(
            f"| {skill} | "
            + " | ".join(f"{c['diverged']}/{c['episodes']}" for c in row)
            + f" | {rate:,.0f} |"
        )
    failures = [(c["skill"], c["mass_g"], seed, t) for c in cells for seed, t in c["first_diverged"]]
    if failures:
        print("\nFirst diverged episodes (skill, mass g, seed, control step):", failures[:20])
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "cells": cells}, indent=1)
        )


if __name__ == "__main__":
    main()
