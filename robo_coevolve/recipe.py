"""Recipes: one policy runs several of the tree's skills in a row, in one episode.

A ``Recipe`` (``skill_tree.Recipe``, from the tree's config) names a sequence of skill-tree nodes
(``cook``: scoop, toss, serve_turned). Its episode starts where the first node's tasks start and
runs the stages in order with one policy: the policy gets stage ``i``'s instruction, and when its
own end signal fires (``VLAPolicy.holding``: it predicts that the demonstration has ended, as it
learnt from where demonstrations end) it holds its last command for the scorer's hold time, then
gets the next instruction. The scorer never moves it on. A stage that has not signalled its end
within its node's horizon fails the recipe.

Success is every stage's predicate, in order, on that stage's stretch of the episode
(``scoring.success.judge`` on the events of the stretch), and the egg intact at the end. The
composition figure compares the recipe's success with the product of its stages' own success
rates on their nodes' tasks: their ratio is what the seams between the stages cost.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import binomtest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.closed_loop import single_thread_torch
from robo_coevolve.scoring import Scorer, Thresholds
from robo_coevolve.scoring.success import judge
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory

if TYPE_CHECKING:
    from robo_coevolve.skill_tree import Recipe, SkillNode


@dataclass
class RecipeRun:
    """One recipe episode: whether it succeeded, how many stages it completed in order, the first
    failure (or "success"), the control step at which each stage handed over, and the episode."""

    success: bool
    stages_done: int
    reason: str
    switches: list[int]
    trajectory: Trajectory = field(repr=False)


def start_tasks(recipe: Recipe, stages: Sequence[SkillNode], n: int, seed: int) -> list[TaskSpec]:
    """``n`` start states of ``recipe``: drawn from its first stage's tasks, with a horizon that
    holds every stage's own horizon and hold, in a scene with the salt shaker if a stage needs it."""
    hold = Thresholds().hold_time
    horizon = sum(s.distribution().base.horizon + hold for s in stages)
    salt = any(s.distribution().base.with_salt for s in stages)
    drawn = stages[0].distribution().sample_many(np.random.default_rng(seed), n)
    return [t.replace(horizon=horizon, with_salt=salt) for t in drawn]


def run_recipe(
    policy,
    stages: Sequence[SkillNode],
    task: TaskSpec,
    control_hz: float = 50.0,
    thresholds: Thresholds | None = None,
) -> RecipeRun:
    """Run one recipe episode from ``task`` (``start_tasks``) with ``policy``, stage by stage."""
    thresholds = thresholds or Thresholds()
    env = EggFlipEnv(
        task=task,
        control_hz=control_hz,
        privileged=policy.privileged,
        image_size=policy.image_size,
        thresholds=thresholds,
        instruction="text",
    )
    scorer = env.scorer
    try:
        obs, _ = env.reset(seed=task.seed)
        initial = env.initial_state.copy()
        actions, proprio, switches = [], [obs["proprio"]], []
        done, silent = False, None  # silent: the stage that never signalled its end
        with single_thread_torch():
            for i, node in enumerate(stages):
                budget = int(round(node.distribution().base.horizon * control_hz))
                policy.reset(1)
                ended_at = None
                for t in range(budget + scorer.hold_steps):
                    shown = {k: np.asarray(v)[None] for k, v in obs.items() if k != "instruction"}
                    shown["instruction"] = [node.instruction]
                    action = np.asarray(policy.act(shown), np.float32).reshape(5)
                    obs, _, terminated, truncated, _ = env.step(np.clip(np.nan_to_num(action), -1, 1))
                    actions.append(action)
                    proprio.append(obs["proprio"])
                    if ended_at is None and policy.holding[0]:
                        ended_at = t
                    if terminated or truncated:
                        done = True
                        break
                    if ended_at is not None and t - ended_at >= scorer.hold_steps:
                        break  # held for the scorer's hold time: hand over
                    if ended_at is None and t + 1 >= budget:
                        break
                switches.append(len(actions))
                if ended_at is None and not done:
                    silent = i
                if done or silent is not None:
                    break
        traj = Trajectory.from_env(
            env,
            initial,
            actions,
            proprio,
            task.seed,
            {"plan": "recipe", "stages": [s.name for s in stages], "switches": switches},
        )
    finally:
        env.close()
    return _verdict(stages, traj, switches, silent, scorer)


def _verdict(stages, traj: Trajectory, switches: list[int], silent: int | None, scorer: Scorer) -> RecipeRun:
    """Judge each stage on its stretch of ``traj``, in order (a stage that never signalled its
    end fails there); then the egg's integrity at the end."""
    record = traj.record()
    th = scorer.thresholds
    starts = [0, *switches[:-1]]
    for i, (start, stop) in enumerate(zip(starts, switches, strict=True)):
        node = stages[i]
        stretch = scorer.events({k: v[start:stop] for k, v in record.items()})
        ok, reason = (
            judge(node.skill, stretch, scorer.hold_steps, th) if stop > start else (False, "never ran")
        )
        if i == silent:
            seconds = node.distribution().base.horizon
            ok, reason = False, f"no end signal within {seconds:.1f} s ({reason})"
        if not ok:
            return RecipeRun(False, i, f"stage {i + 1} ({node.name}): {reason}", switches, traj)
    if len(switches) < len(stages):  # the egg fell or the simulation diverged mid-stage
        return RecipeRun(False, len(switches), "the episode ended early", switches, traj)
    integrity = float(scorer.events(record)["integrity"][-1])
    if integrity < th.min_integrity:
        return RecipeRun(
            False, len(stages), f"egg cracked over the recipe (integrity {integrity:.2f})", switches, traj
        )
    return RecipeRun(True, len(stages), "success", switches, traj)


def evaluate_recipe(
    policy,
    recipe: Recipe,
    stages: Sequence[SkillNode],
    seed: int,
    stage_success: Mapping[str, float] | None = None,
    n: int | None = None,
) -> tuple[dict[str, Any], list[RecipeRun]]:
    """Run ``recipe`` on ``n`` (default ``recipe.eval_tasks``) held-out start states drawn with
    ``seed``. Returns the report and the runs. The report holds the success rate with its 95%
    Wilson interval, the share of episodes that completed each stage in order, the failure reasons
    and, given each stage's own success rate (``stage_success``: node name -> rate on its node's
    held-out tasks), their product and the recipe's ratio to it."""
    n = recipe.eval_tasks if n is None else n
    runs = [run_recipe(policy, stages, task) for task in start_tasks(recipe, stages, n, seed)]
    successes = sum(r.success for r in runs)
    report: dict[str, Any] = {
        "recipe": recipe.name,
        "stages": list(recipe.stages),
        "n": n,
        "success": successes / n,
        "interval95": _wilson(successes, n),
        "completed": {s: sum(r.stages_done > i for r in runs) / n for i, s in enumerate(recipe.stages)},
        "reasons": dict(Counter(r.reason for r in runs if not r.success).most_common()),
    }
    if stage_success is not None and all(s in stage_success for s in recipe.stages):
        product = math.prod(stage_success[s] for s in recipe.stages)
        report["stage_success"] = {s: stage_success[s] for s in recipe.stages}
        report["product"] = product
        report["ratio_to_product"] = report["success"] / product if product > 0 else None
    return report, runs


def _wilson(k: int, n: int) -> list[float]:
    """95% Wilson score interval of ``k`` successes in ``n``."""
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(ci.low), float(ci.high)]
