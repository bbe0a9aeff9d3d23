"""What a camera student of a state policy must see, and where it goes wrong, per skill.

    python benchmarks/distill_diagnosis.py RUN --skill catch [--student DIR/student] [--tasks 100]

RUN is a run directory (its latest checkpoint and its node's tasks) or, with ``--skill`` naming a
skill, a checkpoint directory. Two tables, on the same ``--tasks`` held-out tasks (``--seed``):

1. **The teacher without parts of its egg state**: its success when the egg's linear and/or
   angular velocity is replaced by the mean it was trained on (what one camera frame cannot
   show), and with, in addition, a fixed random error of ``--position-error`` m on the egg's
   position per episode (a camera's imprecision). The gap to the full teacher is what those
   inputs are worth.
2. **The student's action error by episode step** (with ``--student``): the mean absolute
   difference between the student's executed actions and the teacher's labels at the states of
   the teacher's episodes and of the student's own, per range of steps, beside the teacher's own
   motion there (the mean absolute delta it commands). Where the error is a large share of the
   motion, the student has not learnt that part of the skill.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from robo_coevolve.evolve.run_state import RunState  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.learn import evaluate_policy  # noqa: E402
from robo_coevolve.learn.distill import Distiller  # noqa: E402
from robo_coevolve.policy import VLAPolicy  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402

# Columns of the egg state (EggFlipPhysics.egg_state): position, quaternion, velocities.
POSITION, LINEAR, ANGULAR = [0, 1, 2], [7, 8, 9], [10, 11, 12]
STEPS = [(0, 4), (4, 8), (8, 12), (12, 20), (20, 40), (40, None)]


class MaskedTeacher:
    """``teacher`` acting on an egg state whose ``hidden`` columns hold its training mean, and
    whose position is off by a fixed random ``position_error`` (m, per axis) per episode."""

    def __init__(self, teacher: VLAPolicy, hidden: list[int], position_error: float = 0.0, seed: int = 0):
        self.teacher, self.hidden, self.position_error = teacher, hidden, position_error
        self.privileged, self.image_size = teacher.privileged, teacher.image_size
        self.rng = np.random.default_rng(seed)
        self.offset: np.ndarray | None = None

    def reset(self, batch: int) -> None:
        self.teacher.reset(batch)
        self.offset = self.rng.normal(0.0, self.position_error, (batch, 3)) if self.position_error else None

    def act(self, obs: dict) -> np.ndarray:
        egg = np.array(obs["egg"], np.float32)
        egg[:, self.hidden] = self.teacher.egg_mean.numpy()[self.hidden]
        if self.offset is not None:
            egg[:, POSITION] += self.offset
        return self.teacher.act({**obs, "egg": egg})


def load(args) -> tuple[VLAPolicy, TaskDistribution]:
    state = RunState.load(args.teacher) if (args.teacher / "state.json").is_file() else None
    if state is None:
        return VLAPolicy.from_pretrained(args.teacher), TaskDistribution.for_skill(args.skill)
    nodes = {n.name: n for n in state.skill_tree().nodes}
    if args.skill not in nodes:
        raise SystemExit(f"run {args.teacher} has no node {args.skill!r}: its nodes are {list(nodes)}")
    return VLAPolicy.from_pretrained(args.teacher / state.checkpoint), nodes[args.skill].distribution()


def error_by_step(
    distiller: Distiller, student: VLAPolicy, trajectories
) -> list[tuple[str, int, float, float]]:
    """Rows (steps, samples, student error, teacher motion) at the states of ``trajectories``."""
    data = distiller.from_trajectories(trajectories)
    e = student.config.execute
    error = Distiller.action_errors(student, data, e).mean(1)
    motion = np.abs(data.deltas[:, :e]).mean((1, 2))
    step = np.rint(data.time * trajectories[0].control_hz).astype(int)
    rows = []
    for lo, hi in STEPS:
        rows_in = (step >= lo) & (step < (hi if hi is not None else np.inf))
        if rows_in.any():
            name = f"{lo}-{hi - 1}" if hi is not None else f"{lo}+"
            rows.append(
                (name, int(rows_in.sum()), float(error[rows_in].mean()), float(motion[rows_in].mean()))
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("teacher", type=Path, help="run directory, or a state policy's checkpoint")
    parser.add_argument("--skill", required=True, help="the run's node (or, for a checkpoint, the skill)")
    parser.add_argument("--student", type=Path, help="a camera student's checkpoint (table 2)")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=12_000, help="held-out task seed")
    parser.add_argument("--position-error", type=float, default=0.01, help="m, per axis and episode")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    teacher, tasks = load(args)
    if not teacher.config.use_egg_state:
        raise SystemExit(f"{args.teacher}'s policy does not read the egg state: nothing to mask")

    print(f"\n| teacher's egg state ({args.skill}, {args.tasks} tasks) | success | main failure |")
    print("|---|--:|---|")
    variants = [
        ("full", [], 0.0),
        ("linear velocity at its mean", LINEAR, 0.0),
        ("angular velocity at its mean", ANGULAR, 0.0),
        ("both velocities at their mean", LINEAR + ANGULAR, 0.0),
        (
            f"both, and position off by {args.position_error * 100:g} cm",
            LINEAR + ANGULAR,
            args.position_error,
        ),
    ]
    # One process: the masked teacher is this script's class.
    with LocalBackend(workers=1) as backend:
        for name, hidden, error in variants:
            policy = MaskedTeacher(teacher, hidden, error) if hidden or error else teacher
            result = evaluate_policy(policy, tasks, backend, n=args.tasks, seed=args.seed)
            failures = {k: v for k, v in result.reasons.items() if k != "success"}
            worst = max(failures, key=failures.get) if failures else "-"
            print(f"| {name} | {result.success_rate:.0%} | {worst} ({failures.get(worst, 0)}) |")
    if args.student is None:
        return

    student = VLAPolicy.from_pretrained(args.student)
    with LocalBackend(workers=args.workers) as backend:
        distiller = Distiller(teacher, backend, student=student.config)
        for who, policy in (("teacher", teacher), ("student", student)):
            trajectories = distiller.rollouts(policy, tasks, args.tasks, args.seed)
            rate = np.mean([t.success for t in trajectories])
            print(
                f"\n| steps ({who}'s episodes, {rate:.0%} success) | states | student error | teacher motion |"
            )
            print("|---|--:|--:|--:|")
            for name, n, error, motion in error_by_step(distiller, student, trajectories):
                print(f"| {name} | {n} | {error:.4f} | {motion:.4f} |")


if __name__ == "__main__":
    main()
