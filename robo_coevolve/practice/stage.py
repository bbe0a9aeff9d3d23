"""The practice stage: after a node's clone is selected, its policy practises closed loop on the
node's tasks (and those of the nodes it keeps), by the configured method, and the practised
policy replaces the clone only if it does at least as well on the loop's selection tasks (the
gate, scored as ``evolve.selection`` scores clones)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from robo_coevolve.atomic import write_text_atomic
from robo_coevolve.evolve.selection import SelectionTasks, selection_score
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.practice.config import PracticeConfig
from robo_coevolve.practice.tasks import practice_tasks
from robo_coevolve.skill_tree import SkillNode


class PracticeError(RuntimeError):
    """A practice method that cannot run in this build."""


def learn(
    policy: VLAPolicy, tasks, backend, config: PracticeConfig, rng: np.random.Generator
) -> tuple[VLAPolicy, dict]:
    """A copy of ``policy`` practised on ``tasks`` by ``config.method``, and the method's record
    (no gate: ``practise`` adds it)."""
    if config.method == "rl":
        from robo_coevolve.practice.rl import practise_rl

        return practise_rl(policy, tasks, backend, config.rl, rng)
    if config.method == "dpo":
        from robo_coevolve.practice.preference import practise_preference

        # the same episode budget: samples tries on each of a share of the tasks
        return practise_preference(
            policy, tasks[: max(1, len(tasks) // config.dpo.samples)], backend, config.dpo, rng
        )
    raise PracticeError(f"practice.method={config.method!r}: nothing to practise (use rl or dpo)")


def practise(
    policy: VLAPolicy,
    node: SkillNode,
    kept: list[SkillNode],
    backend,
    config: PracticeConfig,
    rng: np.random.Generator,
    output_dir: str | Path | None = None,
    gate: SelectionTasks | None = None,
    clone_rates: dict[str, float] | None = None,
) -> tuple[VLAPolicy, dict[str, Any]]:
    """``policy`` (the selected clone) practised on ``node`` and the ``kept`` nodes, kept if the
    gate passes it: the practised policy when it scores at least as well as the clone on
    ``gate`` (the loop's selection tasks; None: ``config.gate_episodes`` fresh tasks per node),
    else the clone itself. ``clone_rates``: the clone's rates on ``gate`` if already measured.
    Returns the policy and the record (also written to ``output_dir/practice.json``)."""
    start = time.perf_counter()
    nodes = [node, *kept]
    if gate is None:  # drawn apart from what the method draws, so every method meets the same gate
        seeds = rng.spawn(1)[0].integers(2**31 - 1, size=len(nodes))
        gate = SelectionTasks(
            nodes, config.gate_episodes, {m.name: int(s) for m, s in zip(nodes, seeds, strict=True)}
        )
    tasks = practice_tasks(nodes, config, rng, policy.config.use_language)
    practised, learnt = learn(policy, tasks, backend, config, rng)
    bars = gate.bars()
    before = clone_rates if clone_rates is not None else gate.rates(policy, backend)
    after = gate.rates(practised, backend)
    kept_practised = selection_score(after, bars) >= selection_score(before, bars)
    record = {
        "method": config.method,
        "tasks": len(tasks),
        "learn": learnt,
        "gate": {"clone": before, "practised": after, "kept": "practised" if kept_practised else "clone"},
        "seconds": time.perf_counter() - start,
    }
    if output_dir is not None:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(output_dir) / "practice.json", json.dumps(record, indent=2) + "\n")
    return (practised if kept_practised else policy), record
