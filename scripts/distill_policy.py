"""Distil a policy checkpoint into a student, and report both closed loop on the same held-out tasks.

    # the image policy into a small state-only student (compression), one skill:
    python scripts/distill_policy.py TEACHER_CHECKPOINT --library DIR --out DIR [--skill scoop]
    # a run's state policy into the image policy (privileged teacher), every node of its tree:
    python scripts/distill_policy.py RUN --student-config conf/policy/vla.yaml --out DIR --threads 2

The teacher is a checkpoint directory, or a run directory: its latest checkpoint, its library and
its skill tree's nodes (tasks and instruction; ``--skill`` picks nodes by name, default every
node with segments in the library). The student (``robo_coevolve.learn.distill``) is trained on
the teacher's action chunks at the library's states, at the states of the teacher's own
episodes on fresh tasks and, per DAgger round, at the states of the student's own episodes. Then
teacher and student run without noise on ``--eval`` held-out tasks per skill (the same seeded
tasks for both). Writes ``OUT/student/`` (the student, ``save_pretrained``), ``OUT/round_<k>/``
(training curves) and ``OUT/report.json``, and prints one table row per skill.
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

from robo_coevolve.configs import policy_option  # noqa: E402
from robo_coevolve.evolve.run_state import RunState  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.learn import ChunkDataset, TrainConfig  # noqa: E402
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


def load_teacher(args) -> tuple[Path, SkillLibrary, dict[str, TaskDistribution]]:
    """The teacher's checkpoint, the library and the task distribution of each skill to distill."""
    state = RunState.load(args.teacher) if (args.teacher / "state.json").exists() else None
    if state is None:
        if args.library is None:
            raise ValueError(f"{args.teacher} is a checkpoint, not a run directory: give --library")
        library = SkillLibrary(args.library, create=False)
        skills = args.skill or ["scoop"]
        return args.teacher, library, {s: TaskDistribution.for_skill(s) for s in skills}
    if state.checkpoint is None:
        raise ValueError(f"run {args.teacher} has no policy checkpoint yet")
    library = SkillLibrary(args.library or args.teacher / "library", create=False)
    nodes = {n.name: n for n in state.skill_tree().nodes}
    names = args.skill or [n for n, node in nodes.items() if state.library.get(node.skill)]
    unknown = [n for n in names if n not in nodes]
    if unknown:
        raise ValueError(f"run {args.teacher} has no node {unknown}: its nodes are {list(nodes)}")
    return args.teacher / state.checkpoint, library, {n: nodes[n].distribution() for n in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "teacher", type=Path, help="checkpoint directory (VLAPolicy.save_pretrained) or run directory"
    )
    parser.add_argument("--library", type=Path, help="skill library (default: the run's)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--skill", nargs="+", help="skills (a run's node names) to distill; see above")
    parser.add_argument(
        "--student-config",
        type=Path,
        help="the student's policy config, e.g. conf/policy/vla.yaml (default: a small state-only student)",
    )
    parser.add_argument("--segments", type=int, default=300, help="segments labelled per skill (first N)")
    parser.add_argument("--rollouts", type=int, default=100, help="teacher episodes per skill")
    parser.add_argument(
        "--starts", type=int, default=0, help="start states per skill labelled (first observations)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="DAgger rounds (student episodes)")
    parser.add_argument("--dagger-rollouts", type=int, default=100, help="student episodes per round, skill")
    parser.add_argument(
        "--warm-start", action="store_true", help="each round trains the last round's student further"
    )
    parser.add_argument("--hidden", type=int, default=128, help="the default student's width")
    parser.add_argument("--steps", type=int, default=3000, help="student training steps per round")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--eval", type=int, default=100, help="held-out tasks per skill")
    parser.add_argument("--eval-seed", type=int, default=10_000)
    parser.add_argument("--skip-teacher-eval", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=1, help="rollout worker processes")
    parser.add_argument("--threads", type=int, default=1, help="torch threads while training the student")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)

    try:
        checkpoint, library, tasks = load_teacher(args)
        teacher = VLAPolicy.from_pretrained(checkpoint)
        student_config = policy_option(args.student_config) if args.student_config else None
        segments = {s: library.segments(d.skill)[: args.segments] for s, d in tasks.items()}
    except (PolicyConfigError, LibraryError, FileNotFoundError, KeyError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    empty = [s for s, d in tasks.items() if not library.count(d.skill)]
    if empty:
        print(f"error: skill library {library.root} has no segments of {empty}", file=sys.stderr)
        return 2
    if not (args.segments or args.rollouts or args.starts):
        print("error: nothing to distill from: use --segments, --rollouts or --starts", file=sys.stderr)
        return 2
    config = DistillConfig(
        student=student_config,
        hidden=args.hidden,
        teacher_rollouts=args.rollouts,
        start_states=args.starts,
        dagger_rounds=args.rounds,
        dagger_rollouts=args.dagger_rollouts,
        warm_start=args.warm_start,
        train=TrainConfig(
            steps=args.steps, batch_size=args.batch, patience=100, progress=False, threads=args.threads
        ),
        seed=args.seed,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    with LocalBackend(workers=args.workers) as backend:
        try:
            distiller = Distiller(teacher, backend, config)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        evaluation = {skill: (args.eval, args.eval_seed + 1000 * j) for j, skill in enumerate(tasks)}
        student, report = distiller.distill_skills(
            tasks, segments, evaluation, args.out, evaluate_teacher=not args.skip_teacher_eval
        )
        student.save_pretrained(args.out / "student")
    # Latency inputs: a few real library states of the first skill.
    first = next(iter(tasks))
    probe_segments = segments[first][:4] or library.segments(tasks[first].skill)[:4]
    probe = ChunkDataset.from_segments(probe_segments, teacher.config.chunk, distiller.image_size)
    for name, policy in (("teacher", teacher), ("student", student)):
        report.setdefault(name, {"success": {}})
        report[name].update(
            checkpoint=str(checkpoint if name == "teacher" else args.out / "student"),
            parameters=sum(p.numel() for p in policy.parameters()),
            latency_1_ms=1e3 * act_latency(policy, probe, 1),
            latency_16_ms=1e3 * act_latency(policy, probe, 16),
        )
    report["student"]["bytes"] = (args.out / "student" / WEIGHTS_NAME).stat().st_size
    report["teacher"]["bytes"] = (checkpoint / WEIGHTS_NAME).stat().st_size
    report.update(eval_tasks=args.eval, eval_seed=args.eval_seed, args=vars(args))
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")

    t, s = report["teacher"], report["student"]
    print(
        "\n| skill | teacher success | student success | held-out tasks | parameters teacher / student "
        "| act() 1 / 16 envs teacher | student | distill time |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for skill in tasks:
        teacher_success = f"{t['success'][skill]:.0%}" if skill in t["success"] else "-"
        print(
            f"| {skill} | {teacher_success} | {s['success'][skill]:.0%} | {args.eval} | "
            f"{t['parameters']:,} / {s['parameters']:,} | "
            f"{t['latency_1_ms']:.2f} / {t['latency_16_ms']:.2f} ms | "
            f"{s['latency_1_ms']:.2f} / {s['latency_16_ms']:.2f} ms | {report['seconds']:.0f} s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
