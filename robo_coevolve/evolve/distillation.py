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
from collections.abc import Mapping, Sequence
from pathlib import Path

from robo_coevolve.atomic import directory_aside
from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.learn import DistillConfig, Distiller
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillNode

log = logging.getLogger(__name__)

DISTILLED = "distilled"
REPORT = "report.json"


def distill_run(
    settings: DistillConfig,
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
    key = json.loads(json.dumps(dataclasses.asdict(settings)))
    key["train"].pop("threads")
    if (final / REPORT).is_file():
        done = json.loads((final / REPORT).read_text())
        if done.get("teacher_checkpoint") == checkpoint and done.get("settings") == key:
            log.info("already distilled from %s with these settings: %s", checkpoint, final)
            return done
        log.info("distilled before from another checkpoint or with other settings: distilling again")
    distiller = Distiller(teacher, backend, settings)
    tasks = {n.name: n.distribution() for n in nodes}
    segments = {n.name: library.segments(n.skill)[: settings.segments] for n in nodes}
    evaluation = {n.name: (settings.eval_tasks or n.eval_tasks, eval_seeds[n.name]) for n in nodes}
    log.info("distilling %s into the student, on %s", checkpoint, ", ".join(tasks))
    with directory_aside(final) as tmp:
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
    return report
