"""Distil a policy checkpoint (e.g. the image policy) into a small state-only student, and report
both closed loop on the same held-out tasks.

    python scripts/distill_policy.py TEACHER_CHECKPOINT --library DIR --out DIR [--skill scoop]

The student (``robo_coevolve.learn.distill``) is trained on the teacher's action chunks at the
library's states, at the states of the teacher's own episodes on fresh tasks and, per DAgger
round, at the states of the student's own episodes. Then teacher and student run without noise
on ``--eval`` held-out tasks (the same seeded tasks for both). Writes ``OUT/student/`` (the
student, ``save_pretrained``), ``OUT/round_<k>/`` (training curves) and ``OUT/report.json``,
and prints one table row.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.learn import ChunkDataset, TrainConfig, evaluate_policy  # noqa: E402
from robo_coevolve.learn.distill import DistillConfig, Distiller  # noqa: E402
from robo_coevolve.library import LibraryError, SkillLibrary  # noqa: E402
from robo_coevolve.policy import PolicyConfigError, VLAPolicy  # noqa: E402
from robo_coevolve.policy.vla import WEIGHTS_NAME  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402


def act_latency(policy: VLAPolicy, data: ChunkDataset, batch: int, repeats: int = 50) -> float:
    """Seconds per re-planning ``act()`` call for ``batch`` envs (one network call each)."""
    obs = data.batch(np.arange(batch) % len(data))
    obs.pop("deltas"), obs.pop("mask")
    policy.reset(batch)
    policy.act(obs)  # warm-up (first call embeds the instruction)
    start = time.perf_counter()
    for _ in range(repeats):
        policy.reset(batch)
        policy.act(obs)
    return (time.perf_counter() - start) / repeats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("teacher", type=Path, help="checkpoint directory (VLAPolicy.save_pretrained)")
    parser.add_argument("--library", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--skill", default="scoop")
    parser.add_argument("--segments", type=int, default=300, help="library segments labelled (the first N)")
    parser.add_argument("--rollouts", type=int, default=100, help="teacher episodes on fresh tasks")
    parser.add_argument("--rounds", type=int, default=1, help="DAgger rounds (student episodes)")
    parser.add_argument("--dagger-rollouts", type=int, default=100, help="student episodes per round")
    parser.add_argument("--hidden", type=int, default=128, help="student width")
    parser.add_argument("--steps", type=int, default=3000, help="student training steps per round")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--eval", type=int, default=100, help="held-out tasks for teacher and student")
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--skip-teacher-eval", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="rollout worker processes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)

    try:
        teacher = VLAPolicy.from_pretrained(args.teacher)
        library = SkillLibrary(args.library, create=False)
        segments = library.segments(args.skill)[: args.segments] if args.segments else []
    except (PolicyConfigError, LibraryError, FileNotFoundError, KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.segments and not segments:
        print(f"error: skill library {args.library} has no {args.skill!r} segments", file=sys.stderr)
        return 2
    # Latency inputs: a few real library states (any of the skill's, when none are distilled).
    probe_segments = segments[:4] or library.segments(args.skill)[:4]
    if not probe_segments:
        print(f"error: skill library {args.library} has no {args.skill!r} segments", file=sys.stderr)
        return 2
    if not segments and not args.rollouts:
        print("error: nothing to distil from: use --segments and/or --rollouts", file=sys.stderr)
        return 2
    config = DistillConfig(
        hidden=args.hidden,
        teacher_rollouts=args.rollouts,
        dagger_rounds=args.rounds,
        dagger_rollouts=args.dagger_rollouts,
        train=TrainConfig(steps=args.steps, batch_size=args.batch, patience=100, progress=False),
        seed=args.seed,
    )
    tasks = TaskDistribution.for_skill(args.skill)
    args.out.mkdir(parents=True, exist_ok=True)
    with LocalBackend(workers=args.workers) as backend:
        distiller = Distiller(teacher, backend, config)
        student, report = distiller.distill(segments, tasks, args.out)
        student.save_pretrained(args.out / "student")
        evals = {"student": evaluate_policy(student, tasks, backend, n=args.eval, seed=args.eval_seed)}
        if not args.skip_teacher_eval:
            evals["teacher"] = evaluate_policy(teacher, tasks, backend, n=args.eval, seed=args.eval_seed)
            # Held-out agreement: the teacher's own evaluation episodes, labelled by it.
            held_out = distiller.from_trajectories(evals["teacher"].trajectories)
            report["held_out_action_error"] = distiller.agreement(student, held_out)
    c = teacher.config
    probe = ChunkDataset.from_segments(probe_segments, c.chunk, c.image_size if c.use_image else None)
    for name, policy in (("teacher", teacher), ("student", student)):
        report[name] = {
            "checkpoint": str(args.teacher if name == "teacher" else args.out / "student"),
            "parameters": sum(p.numel() for p in policy.parameters()),
            "latency_1_ms": 1e3 * act_latency(policy, probe, 1),
            "latency_16_ms": 1e3 * act_latency(policy, probe, 16),
        }
        if name in evals:
            report[name].update(success=evals[name].success_rate, reasons=evals[name].reasons)
    report["student"]["bytes"] = (args.out / "student" / WEIGHTS_NAME).stat().st_size
    report["teacher"]["bytes"] = (args.teacher / WEIGHTS_NAME).stat().st_size
    report.update(skill=args.skill, eval_tasks=args.eval, eval_seed=args.eval_seed, args=vars(args))
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")

    t, s = report["teacher"], report["student"]
    teacher_success = f"{t['success']:.0%}" if "success" in t else "-"
    print(
        "\n| skill | teacher success | student success | held-out tasks | parameters teacher / student "
        "| act() 1 / 16 envs teacher | student | distil time |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    print(
        f"| {args.skill} | {teacher_success} | {s['success']:.0%} | {args.eval} | "
        f"{t['parameters']:,} / {s['parameters']:,} | "
        f"{t['latency_1_ms']:.2f} / {t['latency_16_ms']:.2f} ms | "
        f"{s['latency_1_ms']:.2f} / {s['latency_16_ms']:.2f} ms | {report['seconds']:.0f} s |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
