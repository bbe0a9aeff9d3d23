"""The robustness suite: each node's skill x perturbation family x arm, success on held-out tasks.

For every node the run reached and every family of ``evaluation.perturbations`` that applies to
its skill, ``tasks`` held-out tasks (the family's held-out range; seeds from
``evaluation.seeds.ROBUSTNESS``) run in every arm, the same tasks for all:

- ``answer``: the node's primitive search answer, open loop (it cannot see: observation
  perturbations leave it as it is);
- ``oracle``: the search re-run on each perturbed task with the simulator (``evaluation.oracle``),
  an upper bound of what an open-loop motion can recover;
- policies: the run's final policy, its clone before practice when the run saved one, BC once,
  any others given. The instruction families run only on instruction-conditioned policies.

The row "none" is the node's own tasks, unperturbed. For each policy the report gives its share
of the oracle's success, the share of the gap between the answer and the oracle it closes, and
its paired margin over the answer with a 95% interval; for the pushes that wait for a phase, the
share of each arm's episodes where the push fired.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from robo_coevolve.evaluation import seeds
from robo_coevolve.evaluation.oracle import replan
from robo_coevolve.evaluation.output import table
from robo_coevolve.evaluation.perturbations import FAMILIES, Family
from robo_coevolve.evaluation.runs import Run
from robo_coevolve.evaluation.stats import outcomes, paired_margin
from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.learn.evaluator import evaluate_tasks
from robo_coevolve.skill_tree import SkillNode

log = logging.getLogger(__name__)

ANSWER, ORACLE, FINAL = "answer", "oracle", "final"
PLANS = (ANSWER, ORACLE)
NOMINAL = "none"  # the row of the node's own tasks, unperturbed

# A policy arm: a name and, per node (a ``SkillNode``), the policies it runs (several: their
# mean, e.g. BC once's clones), made when the node's rows start.
PolicyArms = dict[str, Callable[[SkillNode], Sequence]]


def robustness(
    run: Run,
    backend: RolloutBackend,
    families: Sequence[Family] = FAMILIES,
    plans: Sequence[str] = PLANS,
    policies: PolicyArms | None = None,
    tasks: int = 50,
    oracle_trials: int = 32,
) -> dict:
    """The suite's report (a JSON-safe dict): per skill, per family (and "none"), each arm's
    success and, for each policy arm, its share of the oracle, the gap it closes and its margin
    over the answer."""
    policies = policies or {}
    report: dict = {
        "run": str(run.dir),
        "tasks": tasks,
        "seed": seeds.ROBUSTNESS,
        "oracle trials": oracle_trials,
        "arms": [*plans, *policies],
        "families": {
            f.name: {"doc": f.doc, "unit": f.unit, "train": str(f.train), "heldout": str(f.heldout)}
            for f in families
        },
        "skills": {},
    }
    for i, node in enumerate(run.tree.nodes):
        info = run.state.nodes[node.name]
        if info["best_params"] is None:
            continue
        distribution = node.distribution()
        answer = np.asarray(info["best_params"], dtype=np.float64)
        starts = [answer, *(np.asarray(m, dtype=np.float64) for m in info.get("modes") or [])]
        made = {name: list(make(node)) for name, make in policies.items()}
        rows = {}
        for fam in [None, *families]:
            if fam is not None and not fam.applies_to(node.skill):
                continue
            stream = 0 if fam is None else FAMILIES.index(fam) + 1
            rng = np.random.default_rng([seeds.ROBUSTNESS, i, stream])
            if fam is None:
                drawn = distribution.sample_many(rng, tasks)
            else:
                drawn = fam.tasks(distribution, rng, tasks)
            trajectories: dict[str, list[list]] = {}  # per arm, one list per policy (or plan)
            if fam is None or not fam.language:
                if ANSWER in plans:
                    trials = [Trial(t, PrimitivePlan(answer), {"robustness": ANSWER}) for t in drawn]
                    trajectories[ANSWER] = [backend.run_trials(trials)]
                if ORACLE in plans:
                    seed = [seeds.ORACLE, i, stream]
                    trajectories[ORACLE] = [replan(drawn, starts, backend, oracle_trials, seed)]
            for name, arm in made.items():
                if fam is not None and fam.language and not all(p.config.use_language for p in arm):
                    continue
                trajectories[name] = [evaluate_tasks(p, drawn, backend).trajectories for p in arm]
            runs = {arm: np.array([outcomes(t) for t in ts]) for arm, ts in trajectories.items()}
            runs = {arm: o[0] if arm in PLANS else o for arm, o in runs.items()}
            name = NOMINAL if fam is None else fam.name
            rows[name] = summary(runs)
            if drawn[0].disturbance_phase != "any":  # a push that waits for its phase may never come
                rows[name]["pushes fired"] = {arm: _fired(ts) for arm, ts in trajectories.items()}
            rates = ", ".join(f"{arm} {100 * r:.0f}%" for arm, r in rows[name]["success"].items())
            log.info("%s, %s: %s", node.name, name, rates)
        report["skills"][node.name] = rows  # by node: two nodes may share a skill
    return report


MIN_GAP = 0.1  # the least oracle-minus-answer gap whose closed share is reported


def summary(runs: dict[str, np.ndarray]) -> dict:
    """Each arm's success rate (a 2-D arm: the mean of its rows) and, per one-policy arm, its
    ``% of oracle``, ``gap closed`` (of the answer's gap to the oracle; None where that gap is
    under ``MIN_GAP``: a share of a few tasks' difference is noise) and paired margin over the
    answer."""
    rates = {name: float(o.mean()) for name, o in runs.items()}
    out: dict = {"success": rates, "policies": {}}
    answer, oracle = rates.get(ANSWER), rates.get(ORACLE)
    for name, o in runs.items():
        if name in PLANS or o.shape[0] != 1:
            continue
        own = rates[name]
        row: dict = {
            "% of oracle": own / oracle if oracle else None,
            "gap closed": (own - answer) / (oracle - answer)
            if answer is not None and oracle is not None and oracle - answer >= MIN_GAP
            else None,
        }
        if ANSWER in runs:
            row["vs answer"] = paired_margin(o[0], runs[ANSWER])
        out["policies"][name] = row
    return out


def markdown(report: dict, focus: str = FINAL) -> str:
    """One markdown table per skill: a row per family, each arm's success, and ``focus``'s share
    of the oracle, gap closed and margin over the answer (95% interval)."""
    arms = report["arms"]
    blocks = []
    for skill, rows in report["skills"].items():
        lines = []
        for name, row in rows.items():
            cells = [_percent(row["success"].get(arm)) for arm in arms]
            mine = row["policies"].get(focus)
            if mine is not None:
                margin = mine.get("vs answer")
                cells += [
                    _percent(mine["% of oracle"]),
                    _percent(mine["gap closed"]),
                    "-" if margin is None else _margin(margin),
                ]
            else:
                cells += ["-", "-", "-"]
            lines.append([name, *cells])
        columns = ["family", *arms, f"{focus}: % of oracle", f"{focus}: gap closed", f"{focus} - answer"]
        blocks.append(f"### {skill}\n\n" + table(columns, lines))
    return "\n\n".join(blocks)


def _fired(runs: list[list]) -> float:
    """The share of the episodes in ``runs`` whose phase push fired."""
    episodes = [t for r in runs for t in r]
    return float(np.mean([t.disturbance is not None and t.disturbance.phase == "any" for t in episodes]))


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _margin(m: dict) -> str:
    lo, hi = m["interval"]
    return f"{100 * m['margin']:+.0f} ({100 * lo:+.0f}, {100 * hi:+.0f})"
