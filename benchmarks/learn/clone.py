"""The learner on explorer-made skill libraries: closed-loop success of cloned policies.

For each skill and policy variant (``state``: proprioception + egg state + instruction, no image;
``image``: policy camera + instruction + proprioception, no privileged egg state), a policy is
cloned from the skill's library segments and run closed loop, without noise, on ``--eval``
held-out seeded tasks (egg pose +-2 cm, mass +-20%). Then, with the state variant:

- **instruction**: one network trained on scoop and flip together, evaluated on each skill's tasks
  prompted with its own instruction and with the other skill's;
- **staged fine-tuning**: trained on scoop, then fine-tuned on flip while rehearsing scoop (and,
  for comparison, without rehearsal); scoop success before and after;
- **speed**: training samples/s, and per-step inference latency of ``act()`` (batch 1 and 16).

    python -m benchmarks.learn clone --library DIR [--skills scoop flip] [--variants state image]

``--config conf/policy/vla.yaml`` takes that policy option's settings as the base of
every variant, before ``--policy``; ``--save DIR`` keeps each clone as
``DIR/<skill>_<variant>_seed<k>/`` (``save_pretrained``), e.g. as the teacher of
``robo-coevolve-distill``.

``--rehearse SKILL ...`` trains each clone as the loop trains a later skill: that share of each
batch (``--train '{"rehearsal_share": 0.5}'``) from the named skills' segments, whose success
the row reports too. ``--execute N ...`` runs each clone closed loop re-planning every N steps
(``PolicyConfig.execute``, a run-time setting: the same weights for every N).

``--candidates K --select N`` clones K policies per seed (training seeds ``1000 * seed + i``), runs
each closed loop on N selection tasks (drawn from their own seed stream, never the held-out
evaluation's) and reports the best, as the loop's ``train.candidates`` and
``train.select_episodes`` do: closed-loop success varies by tens of points between training seeds
on the same data, and rollouts, not the validation loss, tell the good clones from the bad.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import numpy as np
import torch

from robo_coevolve.evaluation import seeds, table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import INSTRUCTIONS

VARIANTS = {
    "state": dict(use_image=False, use_egg_state=True),
    "image": dict(use_image=True, use_egg_state=False, image_size=64),
}


BASE: dict = {}  # PolicyConfig fields from --config
OVERRIDES: dict = {}  # PolicyConfig fields set from the command line


def make_policy(variant: str, seed: int) -> VLAPolicy:
    torch.manual_seed(seed)
    return VLAPolicy(PolicyConfig(**{**BASE, **VARIANTS[variant], **OVERRIDES}))


SEGMENTS: dict[str, list] = {}


def dataset(library: SkillLibrary, skill: str, policy: VLAPolicy, limit: int) -> ChunkDataset:
    """The first ``limit`` segments of ``skill`` as samples for ``policy``'s inputs."""
    if skill not in SEGMENTS:
        SEGMENTS[skill] = library.segments(skill)
    c = policy.config
    return ChunkDataset.from_segments(SEGMENTS[skill][:limit], c.chunk, c.image_size if c.use_image else None)


def replanning(policy: VLAPolicy, execute: int) -> VLAPolicy:
    """``policy``'s weights, re-planning every ``execute`` steps."""
    other = VLAPolicy(dataclasses.replace(policy.config, execute=execute))
    other.load_state_dict(policy.state_dict())
    return other.eval()


def latency(policy: VLAPolicy, data: ChunkDataset, batch: int, repeats: int = 50) -> float:
    """Seconds per ``act()`` step for ``batch`` envs (a fresh chunk is predicted every call)."""
    rows = np.arange(batch) % len(data)
    obs = data.batch(rows)
    obs.pop("deltas"), obs.pop("mask")
    start = time.perf_counter()
    for _ in range(repeats):
        policy.reset(batch)
        policy.act(obs)
    return (time.perf_counter() - start) / repeats


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--library", required=True)
    parser.add_argument("--skills", nargs="+", default=["scoop", "flip"])
    parser.add_argument("--variants", nargs="+", default=["state", "image"], choices=sorted(VARIANTS))
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=256, help="training batch size")
    parser.add_argument("--eval", type=int, default=100)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--max-segments", type=int, default=300, help="segments per skill used for training")
    parser.add_argument("--skip-extras", action="store_true", help="only the per-skill success table")
    parser.add_argument(
        "--policy", default="{}", help='PolicyConfig overrides as JSON, e.g. {"min_std": 0.05}'
    )
    parser.add_argument("--config", help="a conf/policy/*.yaml whose settings are the base of each variant")
    parser.add_argument("--save", help="directory to keep each trained policy in")
    parser.add_argument("--workers", type=int, help="rollout worker processes (default: all cores)")
    parser.add_argument("--threads", type=int, help="torch CPU threads for training (default: torch's)")
    parser.add_argument(
        "--train", default="{}", help="TrainConfig overrides as JSON, e.g. '{\"ema_decay\": 0.999}'"
    )
    parser.add_argument("--candidates", type=int, default=1, help="clones per seed (the best is reported)")
    parser.add_argument(
        "--select", type=int, default=0, help="selection tasks per candidate (with --candidates)"
    )
    parser.add_argument(
        "--rehearse", nargs="+", default=[], help="skills each clone rehearses (the loop's later stages)"
    )
    parser.add_argument(
        "--execute", nargs="+", type=int, help="also run each clone re-planning every N steps, per N"
    )
    parser.add_argument("--json")


def run(args: argparse.Namespace) -> None:
    if args.candidates > 1 and args.select < 1:
        raise SystemExit(
            f"--candidates {args.candidates} needs --select N > 0 selection tasks to choose among them"
        )
    if args.config:
        from robo_coevolve.configs import policy_option

        BASE.update(policy_option(args.config).to_dict())
    OVERRIDES.update(json.loads(args.policy))
    if args.threads:
        torch.set_num_threads(args.threads)
    library = SkillLibrary(args.library)
    config = TrainConfig(
        **{"steps": args.steps, "batch_size": args.batch, "progress": False, **json.loads(args.train)}
    )
    results: dict = {"clone": [], "library": {s: library.count(s) for s in args.skills}}

    with LocalBackend(workers=args.workers) as backend:
        for skill in args.skills:
            tasks = TaskDistribution.for_skill(skill)
            for variant in args.variants:
                for seed in args.seeds:
                    clones, selection, data, rehearsal = [], [], None, None
                    for i in range(args.candidates):
                        k = seed if args.candidates == 1 else 1000 * seed + i
                        policy = make_policy(variant, k)
                        if data is None:  # the candidates share one config: build (render) it once
                            data = dataset(library, skill, policy, args.max_segments)
                            if args.rehearse:
                                rehearsal = [
                                    dataset(library, s, policy, args.max_segments) for s in args.rehearse
                                ]
                        fit = BCTrainer(policy, TrainConfig(**{**vars(config), "seed": k})).fit(
                            data, rehearsal=rehearsal
                        )
                        clones.append((policy, fit))
                        if args.candidates > 1:
                            picked = evaluate_policy(
                                policy, tasks, backend, n=args.select, seed=seeds.SELECTION
                            )
                            selection.append(picked.success_rate)
                    policy, fit = clones[int(np.argmax(selection))] if selection else clones[0]
                    ev = evaluate_policy(policy, tasks, backend, n=args.eval)
                    if args.save:
                        policy.save_pretrained(f"{args.save}/{skill}_{variant}_seed{seed}")
                    row = {
                        "skill": skill,
                        "variant": variant,
                        "seed": seed,
                        "segments": min(library.count(skill), args.max_segments),
                        "samples": len(data),
                        "steps": fit["steps"],
                        "best_step": fit["best_step"],  # the weights kept (lowest validation loss)
                        "train_s": fit["seconds"],
                        "samples_per_s": fit["history"][-1]["samples_per_s"],
                        "success": ev.success_rate,
                        "selection": selection,  # each candidate's success on the selection tasks
                        "reasons": ev.reasons,
                        "rehearsed": {
                            s: evaluate_policy(
                                policy, TaskDistribution.for_skill(s), backend, n=args.eval
                            ).success_rate
                            for s in args.rehearse
                        },
                        "by_execute": {  # the config's own setting is the row's success
                            n: ev.success_rate
                            if n == policy.config.execute
                            else evaluate_policy(
                                replanning(policy, n), tasks, backend, n=args.eval
                            ).success_rate
                            for n in args.execute or []
                        },
                        "latency_1": latency(policy, data, 1),
                        "latency_16": latency(policy, data, 16),
                    }
                    results["clone"].append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "reasons"}), flush=True)

        if not args.skip_extras and {"scoop", "flip"} <= set(args.skills):
            # One network, both skills: does the instruction pick the skill?
            policy = make_policy("state", 0)
            both = ChunkDataset.concat(
                [dataset(library, s, policy, args.max_segments) for s in ("scoop", "flip")]
            )
            BCTrainer(policy, config).fit(both)
            grid = {}
            for skill in ("scoop", "flip"):
                for prompt in ("scoop", "flip"):
                    ev = evaluate_policy(
                        policy,
                        TaskDistribution.for_skill(skill),
                        backend,
                        n=args.eval,
                        instruction=INSTRUCTIONS[prompt],
                    )
                    grid[f"{skill} tasks, {prompt} instruction"] = ev.success_rate
            results["instruction"] = grid
            print(json.dumps(grid), flush=True)

            # Staged: scoop, then flip with and without rehearsing scoop.
            stage = {}
            for rehearse in (True, False):
                policy = make_policy("state", 0)
                scoop = dataset(library, "scoop", policy, args.max_segments)
                flip = dataset(library, "flip", policy, args.max_segments)
                # Normalisation from both skills' data at the first stage, so that the second
                # stage's inputs are in range.
                policy.set_normalization(
                    ChunkDataset.concat([scoop, flip]).statistics(policy.config.action_mode)
                )
                BCTrainer(policy, config).fit(scoop, set_normalization=False)
                before = evaluate_policy(policy, TaskDistribution.for_skill("scoop"), backend, n=args.eval)
                BCTrainer(policy, config).fit(
                    flip, rehearsal=scoop if rehearse else None, set_normalization=False
                )
                after = evaluate_policy(policy, TaskDistribution.for_skill("scoop"), backend, n=args.eval)
                flip_ev = evaluate_policy(policy, TaskDistribution.for_skill("flip"), backend, n=args.eval)
                stage["with rehearsal" if rehearse else "without rehearsal"] = {
                    "scoop before": before.success_rate,
                    "scoop after": after.success_rate,
                    "flip after": flip_ev.success_rate,
                }
            results["staged"] = stage
            print(json.dumps(stage), flush=True)

    columns = ["skill", "variant", "seed", "segments", "samples", "steps", "train", "samples/s", "success"]
    lines = [
        [
            r["skill"],
            r["variant"],
            r["seed"],
            r["segments"],
            f"{r['samples']:,}",
            r["steps"],
            f"{r['train_s']:.0f} s",
        ]
        + [f"{r['samples_per_s']:,.0f}", f"{r['success']:.0%}"]
        + [f"{r['latency_1'] * 1e3:.1f} / {r['latency_16'] * 1e3:.1f} ms"]
        for r in results["clone"]
    ]
    print("\n" + table([*columns, "act() 1 / 16 envs"], lines, left=2))
    write_json(args.json, results)
