"""The library's diversity over iterations, with the refiner's novelty pressure on and off.

    python -m benchmarks.evaluate diversity RUN_DIR [--iterations 6] [--trials 300] [--schedule K=V ...]

Replays the data side of the evolution loop of a finished run (``python -m robo_coevolve ...``):
both libraries start from the run's first-iteration segments; then each iteration k runs the
loop's exploration with the run's own policy checkpoint of iteration k - 1 (the last one for
iterations past the run), its schedule (noisy policy episodes and primitives around the search's
modes, ``explore.schedule``, with any ``--schedule`` overrides) and fresh seeds, refines the
successes once (filters, core segment, smoothing, replay), and stores them into two libraries:

- **penalty on**: through the run's novelty gate (``refine.novelty``: rank by
  ``success - penalty * similarity``, admit at ``min_distance`` or more from all stored);
- **penalty off**: every refined segment (``min_distance=0, penalty=0``).

The gate is the refiner's last step, so both libraries see the same segments. Printed per
iteration: segments stored and diversity (``refine.novelty.mean_pairwise_distance`` of the
stored segments' features) of each library. The policy does not learn from these libraries,
so this isolates what the gate does to the data.
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import hydra
import numpy as np
import torch
from omegaconf import OmegaConf

from robo_coevolve.evaluation import config_fields, load_run, seeds, table, write_json
from robo_coevolve.evolve.run_state import checkpoint_name
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.library import SkillLibrary
from robo_coevolve.refine import NoveltyGate, Refiner
from robo_coevolve.refine.novelty import mean_pairwise_distance


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--node", default="scoop")
    ap.add_argument("--iterations", type=int, default=6, help="last iteration replayed (from 2)")
    ap.add_argument("--trials", type=int, default=300, help="per iteration")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--schedule",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="overrides of the run's explore.schedule, e.g. primitive_share=0 'temperatures=[0.0]' "
        "(the policy alone, without noise: exploitation)",
    )


def run(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    r = load_run(args.run_dir)
    state, cfg = r.state, r.state.config
    node = r.node(args.node)
    overrides = OmegaConf.from_dotlist(args.schedule)
    schedule = hydra.utils.instantiate(OmegaConf.merge(cfg["explore"]["schedule"], overrides))
    refine_cfg = copy.deepcopy(cfg["refine"])
    gate = NoveltyGate(**config_fields(refine_cfg["novelty"]))
    refine_cfg["novelty"] = {"min_distance": 0.0, "penalty": 0.0, "scale": gate.scale}
    refiner: Refiner = hydra.utils.instantiate(refine_cfg, _convert_="all")
    modes = state.nodes[args.node]["modes"]
    meta = SkillLibrary(r.dir / "library", create=False).metadata(node.skill)
    first = np.array([m["meta"]["features"] for m in meta if m["meta"].get("iteration") == 1])
    banks = {"on": first.copy(), "off": first.copy()}
    curve = [{"iteration": 1, **{f"{k}_{n}": v for n in banks for k, v in stats(banks[n]).items()}}]
    print(f"iteration 1: {len(first)} segments, diversity {mean_pairwise_distance(first):.3f} (both)")
    with LocalBackend(workers=args.workers, control_hz=float(cfg["env"]["control_hz"])) as backend:
        for k in range(2, args.iterations + 1):
            ckpt = checkpoint_name(min(k - 1, state.iteration))
            policy = r.policy(min(k - 1, state.iteration))
            rng = np.random.default_rng(np.random.SeedSequence([seeds.DIVERSITY, k]))
            tasks = node.distribution()
            n_primitive = int(round(schedule.primitive_share * args.trials))
            n_policy = args.trials - n_primitive
            params = schedule.primitive_params(modes, n_primitive, rng)
            drawn = tasks.sample_many(rng, n_primitive)
            trials = [Trial(t, PrimitivePlan(p)) for t, p in zip(drawn, params, strict=True)]
            trajs = backend.run_trials(trials)
            noise_seeds = rng.integers(2**31 - 1, size=n_policy)
            episodes = [
                PolicyEpisode(t, schedule.noise(i), int(s))
                for i, (t, s) in enumerate(zip(tasks.sample_many(rng, n_policy), noise_seeds, strict=True))
            ]
            trajs += backend.run_policy(policy, episodes)
            wins = [t for t in trajs if t.success][-300:]
            segments, report = refiner.refine(wins, banks["off"], iteration=k)
            banks["off"] = np.vstack([banks["off"], [s.meta["features"] for s in segments]])
            admitted, _ = gate.admit(segments, banks["on"])
            if admitted:
                banks["on"] = np.vstack([banks["on"], [s.meta["features"] for s in admitted]])
            row = {"iteration": k, "checkpoint": ckpt, "successes": len(wins), "refined": len(segments)}
            for n in banks:
                row.update({f"{key}_{n}": v for key, v in stats(banks[n]).items()})
            curve.append(row)
            print(json.dumps(row), flush=True)
    refiner.close()
    columns = ["iteration", "stored, penalty on", "diversity, on", "stored, penalty off", "diversity, off"]
    lines = [
        [
            c["iteration"],
            c["stored_on"],
            f"{c['diversity_on']:.3f}",
            c["stored_off"],
            f"{c['diversity_off']:.3f}",
        ]
        for c in curve
    ]
    print("\n" + table(columns, lines, left=0))
    write_json(args.json, curve)


def stats(bank: np.ndarray) -> dict:
    return {"stored": len(bank), "diversity": mean_pairwise_distance(bank)}
