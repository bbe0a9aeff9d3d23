"""Recipes: one policy runs stages in a row, each handed over at the policy's own end signal."""

import numpy as np
import pytest

from robo_coevolve.action_space import HIGH, LOW
from robo_coevolve.motion import scripted
from robo_coevolve.recipe import evaluate_recipe, run_recipe, start_tasks
from robo_coevolve.skill_tree import Recipe, SkillTree, SkillTreeError


class ScriptedPolicy:
    """The policy protocol of ``VLAPolicy`` played by scripted motions, one per instruction: the
    motion is planned from the first observation after ``reset`` and its end is signalled once its
    last keyframe has passed (``end_after`` s later; None: never)."""

    privileged = True
    image_size = None

    def __init__(self, motions: dict[str, object], end_after: dict[str, float | None] | None = None):
        self.motions = motions
        self.end_after = end_after or {}
        self.resets = 0

    def reset(self, batch: int) -> None:
        assert batch == 1
        self.motion, self.t, self.resets = None, 0, self.resets + 1

    def act(self, obs: dict) -> np.ndarray:
        instruction = obs["instruction"][0]
        if self.motion is None:
            self.instruction = instruction
            self.motion = self.motions[instruction]({k: v[0] for k, v in obs.items() if k != "instruction"})
        assert instruction == self.instruction  # the instruction only changes at a reset
        self.t += 1
        pose = self.motion.at(self.t / 50.0)
        return ((2 * (pose - LOW) / (HIGH - LOW)) - 1)[None].astype(np.float32)

    @property
    def holding(self) -> np.ndarray:
        after = self.end_after.get(self.instruction, 0.0)
        return np.array([after is not None and self.t / 50.0 > self.motion.times[-1] + after])


@pytest.fixture(scope="module")
def tree():
    nodes = {
        "scoop": {"tasks": {"egg_offset_range": 0.02}},
        "serve": {"requires": ["scoop"], "tasks": {"egg_offset_range": 0.02}},
    }
    return SkillTree.from_config(nodes, {"plate_it": {"stages": ["scoop", "serve"], "eval_tasks": 4}})


def policy_for(tree, **end_after):
    scoop, serve = tree.stages("plate_it")
    return ScriptedPolicy(
        {scoop.instruction: scripted.scoop, serve.instruction: scripted.serve},
        {scoop.instruction: end_after.get("scoop", 0.0), serve.instruction: end_after.get("serve", 0.0)},
    )


def test_stages_hand_over_at_the_policys_end_signal(tree):
    """Scripted scoop then scripted serve, each ending when its motion is over: the recipe
    succeeds, and the serve starts when the scoop's end signal has held for the hold time."""
    stages = tree.stages("plate_it")
    task = start_tasks(tree.recipes["plate_it"], stages, 1, seed=3)[0]
    policy = policy_for(tree)
    run = run_recipe(policy, stages, task)
    assert run.success, run.reason
    assert run.stages_done == 2 and policy.resets == 2
    first = run.switches[0]
    assert 1.6 * 50 < first < 2.0 * 50  # the scripted scoop's keyframes end at 1.6 s; + 0.2 s hold
    ev = run.trajectory.events()
    assert ev["blade_only"][first - 1] and ev["plate_only"][-1]


def test_a_stage_that_never_signals_its_end_fails_the_recipe(tree):
    stages = tree.stages("plate_it")
    task = start_tasks(tree.recipes["plate_it"], stages, 1, seed=3)[0]
    run = run_recipe(policy_for(tree, scoop=None), stages, task)
    assert not run.success and run.stages_done == 0
    assert run.reason.startswith("stage 1 (scoop): no end signal within 3.0 s")
    assert len(run.switches) == 1


def test_a_stage_judged_on_its_own_stretch(tree):
    """A scoop that hands over too early (before the egg is lifted) fails at stage 1, though the
    serve that follows carries the egg to the plate."""
    stages = tree.stages("plate_it")
    task = start_tasks(tree.recipes["plate_it"], stages, 1, seed=3)[0]
    policy = policy_for(tree, scoop=-1.0)
    run = run_recipe(policy, stages, task)
    assert not run.success and run.reason.startswith("stage 1 (scoop): egg not")


def test_the_report_compares_the_recipe_with_its_stages_product(tree):
    recipe = tree.recipes["plate_it"]
    report, runs = evaluate_recipe(
        policy_for(tree), recipe, tree.stages("plate_it"), seed=0, stage_success={"scoop": 1.0, "serve": 0.8}
    )
    assert report["n"] == 4 == len(runs) and report["success"] == 1.0
    assert report["completed"] == {"scoop": 1.0, "serve": 1.0}
    assert report["product"] == pytest.approx(0.8) and report["ratio_to_product"] == pytest.approx(1.25)
    low, high = report["interval95"]
    assert 0.4 < low < 1.0 == high


def test_recipes_are_checked_against_the_tree():
    nodes = {"scoop": {}, "serve": {"requires": ["scoop"]}}
    with pytest.raises(SkillTreeError, match="names unknown node"):
        SkillTree.from_config(nodes, {"cook": {"stages": ["scoop", "season"]}})
    with pytest.raises(SkillTreeError, match="at least two nodes"):
        SkillTree.from_config(nodes, {"cook": {"stages": ["scoop"]}})
    with pytest.raises(SkillTreeError, match=r"mastery=1.5 must be in \(0, 1\]"):
        SkillTree.from_config(nodes, {"cook": {"stages": ["scoop", "serve"], "mastery": 1.5}})
    with pytest.raises(SkillTreeError, match="name is taken"):
        SkillTree.from_config(nodes, {"serve": {"stages": ["scoop", "serve"]}})
    assert isinstance(
        SkillTree.from_config(nodes, {"c": {"stages": ["scoop", "serve"]}}).recipes["c"], Recipe
    )


def test_a_recipe_that_seasons_runs_in_the_salted_scene_from_its_first_stage():
    nodes = {
        "scoop": {"tasks": {"egg_offset_range": 0.02}},
        "serve": {"requires": ["scoop"], "tasks": {"egg_offset_range": 0.02}},
        "season": {"requires": ["serve"], "tasks": {"egg_offset_range": 0.01}},
    }
    tree = SkillTree.from_config(nodes, {"dinner": {"stages": ["scoop", "serve", "season"], "eval_tasks": 2}})
    stages = tree.stages("dinner")
    tasks = start_tasks(tree.recipes["dinner"], stages, 2, seed=5)
    assert all(t.with_salt and t.skill == "scoop" for t in tasks)
    motions = {s.instruction: scripted.MOTIONS[s.skill] for s in stages}
    runs = [run_recipe(ScriptedPolicy(motions), stages, task) for task in tasks]
    assert [r.reason for r in runs] == ["success"] * 2
    salt = runs[0].trajectory.events()
    assert salt["salt_dispensed"][runs[0].switches[1]] == 0 < salt["salt_on_egg"][-1]
