"""Distill a policy checkpoint into a student, and report both closed loop on the same held-out tasks.

examples:
  # the image policy into a small state-only student (compression), one skill:
  robo-coevolve-distill TEACHER_CHECKPOINT --library DIR --out DIR --skill scoop
  # a run's state policy into the image policy (privileged teacher), every node of its tree:
  robo-coevolve-distill RUN --student-config conf/policy/vla.yaml --out DIR --threads 2

The teacher is a checkpoint directory, or a run directory: its latest checkpoint, its library and
its skill tree's nodes (tasks and instruction; --skill picks nodes by name, default every node
with segments in the library). The student (robo_coevolve.learn.distill) is trained on the
teacher's action chunks at the library's states, at the states of the teacher's own episodes on
fresh tasks and, per DAgger round, at the states of the student's own episodes. Then teacher and
student run without noise on --eval held-out tasks per skill (the same seeded tasks for both).
Writes OUT/student/ (the student, save_pretrained), OUT/round_<k>/ (training curves) and
OUT/report.json, and prints one table row per skill.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import checkpoint, saved_state
from robo_coevolve.configs import policy_option
from robo_coevolve.evolve.run_state import STATE_FILE
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import ChunkDataset, TrainConfig
from robo_coevolve.learn.distill import DistillConfig, Distiller
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.policy.vla import WEIGHTS_NAME
from robo_coevolve.task_distribution import TaskDistribution


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


def library_at(path: Path) -> SkillLibrary:
    """The skill library at ``path``, every file checked."""
    if not path.is_dir():
        raise UsageError(f"skill library {path} does not exist: give --library DIR")
    return SkillLibrary(path, create=False)


def load_teacher(args) -> tuple[Path, SkillLibrary, dict[str, TaskDistribution]]:
    """The teacher's checkpoint, the library and the task distribution of each skill to distill."""
    if not args.teacher.is_dir():
        raise UsageError(
            f"teacher {args.teacher} does not exist: give a policy checkpoint or a run directory"
        )
    state = saved_state(args.teacher) if (args.teacher / STATE_FILE).exists() else None
    if state is None:
        teacher = checkpoint(str(args.teacher))  # neither a run nor a checkpoint: says so
        if args.library is None:
            raise UsageError(f"{args.teacher} is a checkpoint, not a run directory: give --library DIR")
        skills = args.skill or ["scoop"]
        return teacher, library_at(args.library), {s: TaskDistribution.for_skill(s) for s in skills}
    if state.checkpoint is None:
        raise UsageError(
            f"run {args.teacher} has no policy checkpoint yet: distill it after its first training"
        )
    library = library_at(args.library or args.teacher / "library")
    nodes = {n.name: n for n in state.skill_tree().nodes}
    names = args.skill or [n for n, node in nodes.items() if state.library.get(node.skill)]
    unknown = [n for n in names if n not in nodes]
    if unknown:
        raise UsageError(f"run {args.teacher} has no node {unknown}: its nodes are {list(nodes)}")
    return args.teacher / state.checkpoint, library, {n: nodes[n].distribution() for n in names}


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="robo-coevolve-distill", description=__doc__)
    p.add_argument(
        "teacher", type=Path, help="checkpoint directory (VLAPolicy.save_pretrained) or run directory"
    )
    p.add_argument("--library", type=Path, help="skill library (default: the run's)")
    p.add_argument("--out", required=True, type=Path, help="directory of the student and report.json")
    p.add_argument("--skill", nargs="+", help="skills (a run's node names) to distill; see above")
    p.add_argument(
        "--student-config",
        type=Path,
        help="the student's policy config, e.g. conf/policy/vla.yaml (default: a small state-only student)",
    )
    p.add_argument("--segments", type=int, default=300, help="segments labelled per skill (first N)")
    p.add_argument("--rollouts", type=int, default=100, help="teacher episodes per skill")
    p.add_argument(
        "--starts", type=int, default=0, help="start states per skill labelled (first observations)"
    )
    p.add_argument("--rounds", type=int, default=1, help="DAgger rounds (student episodes)")
    p.add_argument("--dagger-rollouts", type=int, default=100, help="student episodes per round, skill")
    p.add_argument(
        "--warm-start", action="store_true", help="each round trains the last round's student further"
    )
    p.add_argument("--hidden", type=int, default=128, help="the default student's width")
    p.add_argument("--steps", type=int, default=3000, help="student training steps per round")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--eval", type=int, default=100, help="held-out tasks per skill")
    p.add_argument("--eval-seed", type=int, default=10_000)
    p.add_argument("--skip-teacher-eval", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="rollout worker processes")
    p.add_argument("--threads", type=int, default=1, help="torch threads while training the student")
    return p


@command
def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    torch.set_num_threads(1)
    if not (args.segments or args.rollouts or args.starts):
        raise UsageError("nothing to distill from: give --segments, --rollouts or --starts a positive number")

    checkpoint_dir, library, tasks = load_teacher(args)
    teacher = VLAPolicy.from_pretrained(checkpoint_dir)
    student_config = policy_option(args.student_config) if args.student_config else None
    empty = [s for s, d in tasks.items() if not library.count(d.skill)]
    if empty:
        raise UsageError(f"skill library {library.root} has no segments of {empty}: pick other --skill")
    segments = {s: library.segments(d.skill)[: args.segments] for s, d in tasks.items()}
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
        except ValueError as e:  # a student the teacher's observations cannot feed
            raise UsageError(str(e)) from None
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
            checkpoint=str(checkpoint_dir if name == "teacher" else args.out / "student"),
            parameters=sum(p.numel() for p in policy.parameters()),
            latency_1_ms=1e3 * act_latency(policy, probe, 1),
            latency_16_ms=1e3 * act_latency(policy, probe, 16),
        )
    report["student"]["bytes"] = (args.out / "student" / WEIGHTS_NAME).stat().st_size
    report["teacher"]["bytes"] = (checkpoint_dir / WEIGHTS_NAME).stat().st_size
    report.update(eval_tasks=args.eval, eval_seed=args.eval_seed, args=vars(args))
    (args.out / "report.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    print_table(report, list(tasks), args.eval)
    return 0


def print_table(report: dict, skills: list[str], eval_tasks: int) -> None:
    """One markdown row per skill: both policies' success, size, act() latency."""
    t, s = report["teacher"], report["student"]
    print(
        "\n| skill | teacher success | student success | held-out tasks | parameters teacher / student "
        "| act() 1 / 16 envs teacher | student | distill time |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for skill in skills:
        teacher_success = f"{t['success'][skill]:.0%}" if skill in t["success"] else "-"
        print(
            f"| {skill} | {teacher_success} | {s['success'][skill]:.0%} | {eval_tasks} | "
            f"{t['parameters']:,} / {s['parameters']:,} | "
            f"{t['latency_1_ms']:.2f} / {t['latency_16_ms']:.2f} ms | "
            f"{s['latency_1_ms']:.2f} / {s['latency_16_ms']:.2f} ms | {report['seconds']:.0f} s |"
        )


if __name__ == "__main__":
    raise SystemExit(main())
