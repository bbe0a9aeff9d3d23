"""What a camera student of a state policy must see, and where it goes wrong, per skill.

    python -m benchmarks.evaluate distill RUN --skill catch [--student DIR/student] [--tasks 100]

RUN is a run directory (its latest checkpoint and its node's tasks) or, with ``--skill`` naming a
skill, a checkpoint directory. Three tables, on the same ``--tasks`` held-out tasks (``--seed``):

1. **The teacher without parts of its egg state**: its success when the egg's linear and/or
   angular velocity is replaced by the mean it was trained on (what one camera frame cannot
   show), for the whole episode or for its first plan only (what a history of frames since the
   reset cannot show either); with, in addition, a fixed random error of ``--position-error`` m
   on the egg's position per episode (a camera's imprecision); and with the full state but a
   fixed random error of each ``--velocity-error`` m/s on the linear velocity (what a velocity
   measured from frames would carry). The gap to the full teacher is what those inputs are
   worth.
2. **The student's action error by episode step** (with ``--student``): the mean absolute
   difference between the student's executed actions and the teacher's labels at the states of
   the teacher's episodes and of the student's own, per range of steps, beside the teacher's own
   motion there (the mean absolute delta it commands). Where the error is a large share of the
   motion, the student has not learnt that part of the skill.
3. **Where the student's camera puts the egg** (with ``--student`` trained with ``egg_aux``): the
   median absolute error, per axis in mm, of its camera features' linear egg-position probe at
   the states of the teacher's episodes, by episode step. A velocity read from two frames is
   the difference of two such positions.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.evaluation import seeds, table, write_json
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import evaluate_policy
from robo_coevolve.learn.distill import Distiller
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.task_distribution import TaskDistribution

# Columns of the egg state (EggFlipPhysics.egg_state): position, quaternion, velocities.
POSITION, LINEAR, ANGULAR = [0, 1, 2], [7, 8, 9], [10, 11, 12]
STEPS = [(0, 4), (4, 8), (8, 12), (12, 20), (20, 40), (40, None)]


class MaskedTeacher:
    """``teacher`` acting on an egg state whose ``hidden`` columns hold their training mean (for the
    episode's first ``steps`` steps only, when given), and whose ``errors`` columns are off by a
    fixed random amount per episode (normal, the given std: m for a position, m/s for a
    velocity)."""

    def __init__(
        self,
        teacher: VLAPolicy,
        hidden: list[int] = (),
        steps: int | None = None,
        errors: tuple[list[int], float] | None = None,
        seed: int = 0,
    ):
        self.teacher, self.hidden, self.steps, self.errors = teacher, list(hidden), steps, errors
        self.privileged, self.image_size = teacher.privileged, teacher.image_size
        self.rng = np.random.default_rng(seed)
        self.offset: np.ndarray | None = None
        self.step = 0

    def reset(self, batch: int) -> None:
        self.teacher.reset(batch)
        if self.errors is not None:
            columns, std = self.errors
            self.offset = self.rng.normal(0.0, std, (batch, len(columns)))
        self.step = 0

    def act(self, obs: dict) -> np.ndarray:
        egg = np.array(obs["egg"], np.float32)
        if self.steps is None or self.step < self.steps:
            egg[:, self.hidden] = self.teacher.egg_mean.numpy()[self.hidden]
        self.step += 1
        if self.errors is not None:
            egg[:, self.errors[0]] += self.offset
        return self.teacher.act({**obs, "egg": egg})


def load(args) -> tuple[VLAPolicy, TaskDistribution]:
    state = RunState.load(args.teacher) if (args.teacher / "state.json").is_file() else None
    if state is None:
        return VLAPolicy.from_pretrained(args.teacher), TaskDistribution.for_skill(args.skill)
    nodes = {n.name: n for n in state.skill_tree().nodes}
    if args.skill not in nodes:
        raise SystemExit(f"run {args.teacher} has no node {args.skill!r}: its nodes are {list(nodes)}")
    return VLAPolicy.from_pretrained(args.teacher / state.checkpoint), nodes[args.skill].distribution()


def by_step(step: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """(name, row mask) of each range of ``STEPS`` that holds rows of ``step``."""
    ranges = []
    for lo, hi in STEPS:
        rows = (step >= lo) & (step < (hi if hi is not None else np.inf))
        if rows.any():
            ranges.append((f"{lo}-{hi - 1}" if hi is not None else f"{lo}+", rows))
    return ranges


def error_by_step(student: VLAPolicy, data, step: np.ndarray) -> list[tuple[str, int, float, float]]:
    """Rows (steps, samples, student error, teacher motion) of labelled ``data``."""
    e = student.config.execute
    error = Distiller.action_errors(student, data, e).mean(1)
    motion = np.abs(data.deltas[:, :e]).mean((1, 2))
    return [
        (name, int(r.sum()), float(error[r].mean()), float(motion[r].mean())) for name, r in by_step(step)
    ]


@torch.no_grad()
def position_error_by_step(student: VLAPolicy, data, step: np.ndarray) -> list[tuple[str, int, np.ndarray]]:
    """Rows (steps, samples, median absolute error per axis in mm) of the student's egg-position
    probe on labelled ``data`` (its images and the true egg state). The median, because an egg
    on the floor is far from anything the probe learnt."""
    found = []
    for start in range(0, len(data), 1024):
        normalised = student(data.batch(np.arange(start, min(start + 1024, len(data))))).egg_position
        found.append((normalised * student.egg_std[:3] + student.egg_mean[:3]).numpy())
    error = np.concatenate(found) - data.egg[:, POSITION]
    return [(name, int(r.sum()), 1000 * np.median(np.abs(error[r]), 0)) for name, r in by_step(step)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("teacher", type=Path, help="run directory, or a state policy's checkpoint")
    parser.add_argument("--skill", required=True, help="the run's node (or, for a checkpoint, the skill)")
    parser.add_argument("--student", type=Path, help="a camera student's checkpoint (table 2)")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=seeds.DISTILL, help="held-out task seed")
    parser.add_argument("--position-error", type=float, default=0.01, help="m, per axis and episode")
    parser.add_argument(
        "--velocity-error", type=float, nargs="*", default=[0.01, 0.02], help="m/s, per axis and episode"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the tables here")


def run(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    teacher, tasks = load(args)
    if not teacher.config.use_egg_state:
        raise SystemExit(f"{args.teacher}'s policy does not read the egg state: nothing to mask")

    both, cm = LINEAR + ANGULAR, args.position_error * 100
    variants = {
        "full": {},
        "linear velocity at its mean": dict(hidden=LINEAR),
        "angular velocity at its mean": dict(hidden=ANGULAR),
        "both velocities at their mean": dict(hidden=both),
        "both velocities at their mean, first plan only": dict(hidden=both, steps=teacher.config.execute),
        f"both, and position off by {cm:g} cm": dict(hidden=both, errors=(POSITION, args.position_error)),
        **{f"linear velocity off by {v:g} m/s": dict(errors=(LINEAR, v)) for v in args.velocity_error},
    }
    report: dict = {"teacher": {}}
    lines = []
    # One process: the masked teacher is this module's class.
    with LocalBackend(workers=1) as backend:
        for name, masking in variants.items():
            policy = MaskedTeacher(teacher, **masking) if masking else teacher
            result = evaluate_policy(policy, tasks, backend, n=args.tasks, seed=args.seed)
            failures = {k: v for k, v in result.reasons.items() if k != "success"}
            worst = max(failures, key=failures.get) if failures else "-"
            report["teacher"][name] = {"success": result.success_rate, "main failure": worst}
            lines.append([name, f"{result.success_rate:.0%}", f"{worst} ({failures.get(worst, 0)})"])
    columns = [f"teacher's egg state ({args.skill}, {args.tasks} tasks)", "success", "main failure"]
    print("\n" + table(columns, lines))
    if args.student is not None:
        report |= student_tables(args, teacher, tasks)
    write_json(args.json, report)


def student_tables(args: argparse.Namespace, teacher: VLAPolicy, tasks: TaskDistribution) -> dict:
    """Tables 2 and 3: the student's action error, and its camera's egg position, by step."""
    student = VLAPolicy.from_pretrained(args.student)
    report: dict = {"action error": {}, "position error (mm)": {}}
    with LocalBackend(workers=args.workers) as backend:
        distiller = Distiller(teacher, backend, student=student.config)
        for who, policy in (("teacher", teacher), ("student", student)):
            trajectories = distiller.rollouts(policy, tasks, args.tasks, args.seed)
            data = distiller.from_trajectories(trajectories)
            step = np.rint(data.time * trajectories[0].control_hz).astype(int)
            success = np.mean([t.success for t in trajectories])
            rows = error_by_step(student, data, step)
            report["action error"][who] = [
                {"steps": name, "states": n, "student error": error, "teacher motion": motion}
                for name, n, error, motion in rows
            ]
            columns = [
                f"steps ({who}'s episodes, {success:.0%} success)",
                "states",
                "student error",
                "teacher motion",
            ]
            lines = [[name, n, f"{error:.4f}", f"{motion:.4f}"] for name, n, error, motion in rows]
            print("\n" + table(columns, lines))
            if who == "teacher" and student.egg_probe is not None:
                rows = position_error_by_step(student, data, step)
                report["position error (mm)"] = {name: mm.tolist() for name, _, mm in rows}
                columns = [
                    "steps (teacher's episodes)",
                    "states",
                    "camera's egg position error x / y / z, mm (median)",
                ]
                lines = [[name, n, f"{mm[0]:.1f} / {mm[1]:.1f} / {mm[2]:.1f}"] for name, n, mm in rows]
                print("\n" + table(columns, lines))
    return report
