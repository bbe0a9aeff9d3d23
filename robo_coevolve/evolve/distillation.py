"""The run's optional last stage: its policy distilled into another, e.g. the image policy.

The loop learns the skills with the fast state policy, which reads the egg's state from the
simulator; ``distill=image`` then trains the vision + instruction policy (camera, instruction,
proprioception, no egg state) on that policy's actions (``learn.distill``: a privileged teacher
and DAgger), on every node the run has evaluated, and measures it on each node's held-out tasks,
the very tasks the loop's own success figures come from. The student and its report go to
``RUN/distilled/``, written aside and renamed into place; a finished stage is not redone for the
same teacher checkpoint, and one cut short by a kill is redone from the start.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.learn import DistillConfig, Distiller, TrainConfig
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import SkillNode

log = logging.getLogger(__name__)

DISTILLED = "distilled"
REPORT = "report.json"


@dataclass(frozen=True)
class DistillSettings:
    """What ``distill=...`` configures.

    Args:
        student: the student's ``PolicyConfig`` (``distill=image``: ``conf/policy/vla.yaml``);
            None: no distillation.
        segments: library segments labelled per node (its first).
        teacher_rollouts: the teacher's noiseless episodes per node on fresh tasks.
        start_states: start states per node of fresh tasks, labelled without running an
            episode (each episode has one; a catch is decided by its first chunk).
        dagger_rounds: rounds of the student's own episodes labelled by the teacher.
        dagger_rollouts: the student's episodes per node and round.
        warm_start: each DAgger round trains the last round's student further instead of a
            fresh one.
        steps: training steps per round, on everything gathered so far.
        batch_size: training batch.
        threads: torch threads while training (None: one per core; nothing else runs then).
        eval_tasks: held-out tasks per node for teacher and student (None: the node's
            ``eval_tasks``, the loop's own evaluation tasks).
        seed: the student's initialisation and training seed.
    """

    student: PolicyConfig | None = None
    segments: int = 300
    teacher_rollouts: int = 100
    start_states: int = 3000
    dagger_rounds: int = 2
    dagger_rollouts: int = 100
    warm_start: bool = True
    steps: int = 3000
    batch_size: int = 256
    threads: int | None = None
    eval_tasks: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.student, Mapping):
            object.__setattr__(self, "student", PolicyConfig(**self.student))
        if self.segments < 0:
            raise ValueError(f"distill.segments={self.segments} must be >= 0")
        if self.student is not None and not (self.segments or self.teacher_rollouts or self.start_states):
            raise ValueError(
                "distill.segments, distill.teacher_rollouts and distill.start_states are 0: "
                "nothing to distill from"
            )
        if self.eval_tasks is not None and self.eval_tasks < 1:
            raise ValueError(f"distill.eval_tasks={self.eval_tasks} must be >= 1, or null (the nodes')")
        self.distill_config()  # DistillConfig and TrainConfig validate the rest

    @property
    def enabled(self) -> bool:
        return self.student is not None

    def distill_config(self) -> DistillConfig:
        return DistillConfig(
            teacher_rollouts=self.teacher_rollouts,
            start_states=self.start_states,
            dagger_rounds=self.dagger_rounds,
            dagger_rollouts=self.dagger_rollouts,
            warm_start=self.warm_start,
            train=TrainConfig(
                steps=self.steps,
                batch_size=self.batch_size,
                patience=100,
                progress=False,
                threads=self.threads,
            ),
            seed=self.seed,
        )


def distill_run(
    settings: DistillSettings,
    teacher: VLAPolicy,
    checkpoint: str,
    library: SkillLibrary,
    nodes: Sequence[SkillNode],
    eval_seeds: Mapping[str, int],
    backend: RolloutBackend,
    output_dir: str | Path,
) -> dict:
    """Distil ``teacher`` (the run's ``checkpoint``) into ``settings.student`` on ``nodes`` (see
    the module docstring); returns the report also written to ``RUN/distilled/report.json``: per
    policy, success and failure reasons per node; the nodes' bars; ``holds``: whether the student
    holds every bar; and the distiller's own figures (samples, rounds, timings)."""
    output_dir = Path(output_dir)
    final = output_dir / DISTILLED
    # What the student depends on (torch's thread count only moves the last bits).
    key = {k: v for k, v in json.loads(json.dumps(dataclasses.asdict(settings))).items() if k != "threads"}
    if (final / REPORT).is_file():
        done = json.loads((final / REPORT).read_text())
        if done.get("teacher_checkpoint") == checkpoint and done.get("settings") == key:
            log.info("already distilled from %s with these settings: %s", checkpoint, final)
            return done
        log.info("distilled before from another checkpoint or with other settings: distilling again")
    tmp = output_dir / f".{DISTILLED}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    distiller = Distiller(teacher, backend, settings.distill_config(), settings.student)
    tasks = {n.name: n.distribution() for n in nodes}
    segments = {n.name: library.segments(n.skill)[: settings.segments] for n in nodes}
    evaluation = {n.name: (settings.eval_tasks or n.eval_tasks, eval_seeds[n.name]) for n in nodes}
    log.info("distilling %s into the student, on %s", checkpoint, ", ".join(tasks))
    student, report = distiller.distill_skills(tasks, segments, evaluation, tmp)
    student.save_pretrained(tmp / "student")
    bars = {n.name: n.mastery for n in nodes}
    report.update(
        teacher_checkpoint=checkpoint,
        settings=key,
        bars=bars,
        holds=all(report["student"]["success"][name] >= bar for name, bar in bars.items()),
        eval_tasks={name: n for name, (n, _) in evaluation.items()},
    )
    (tmp / REPORT).write_text(json.dumps(report, indent=2, default=str) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return report
