"""The robustness suite's perturbation families: disjoint ranges, valid tasks of each split."""

import numpy as np
import pytest

from robo_coevolve.evaluation.perturbations import (
    FAMILIES,
    NAMES,
    PARAPHRASES,
    Span,
    family,
    training_tasks,
)
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import INSTRUCTIONS, SKILLS


def the_value(fam, task, base):
    """The value of ``fam``'s perturbation that ``task`` carries (None: read elsewhere)."""
    return {
        "push": task.disturbance_force,
        "push on pan": task.disturbance_force,
        "push on blade": task.disturbance_force,
        "push in air": task.disturbance_force,
        "egg mass": task.egg_mass / base.egg_mass,
        "pan friction": task.egg_pan_friction / base.egg_pan_friction,
        "blade friction": task.egg_blade_friction / base.egg_blade_friction,
        "servo gain": task.servo_gain,
        "latency": task.action_latency,
        "egg obs noise": task.egg_obs_noise,
        "egg obs dropout": task.egg_obs_dropout,
    }.get(fam.name)


def inside(values, value):
    if isinstance(values, Span):
        return any(low - 1e-9 <= value <= high + 1e-9 for low, high in values.intervals)
    return value in values.values


@pytest.mark.parametrize("fam", FAMILIES, ids=NAMES)
def test_train_and_heldout_ranges_are_disjoint(fam):
    assert not fam.train.overlaps(fam.heldout)
    assert not fam.heldout.overlaps(fam.train)


def test_overlapping_ranges_are_refused():
    with pytest.raises(ValueError, match="overlap"):
        FAMILIES[0].__class__("x", "", "N", Span(((0.0, 1.0),)), Span(((0.5, 2.0),)), lambda *a: a[0])


@pytest.mark.parametrize(
    "fam, skill",
    [(f, s) for f in FAMILIES for s in SKILLS if f.applies_to(s)],
    ids=[f"{f.name}-{s}" for f in FAMILIES for s in SKILLS if f.applies_to(s)],
)
def test_each_split_draws_valid_tasks_in_its_range(fam, skill):
    """Every family draws valid TaskSpecs of each skill it applies to for both splits, each
    carrying a value of its own split's range, never of the other's; the node's seeds vary."""
    dist = TaskDistribution.for_skill(skill)
    for split, own, other in (("train", fam.train, fam.heldout), ("heldout", fam.heldout, fam.train)):
        tasks = fam.tasks(dist, np.random.default_rng(0), 12, split=split)
        assert len(tasks) == 12 and all(t.skill == skill for t in tasks)
        assert len({t.seed for t in tasks}) == 12
        for t in tasks:
            value = the_value(fam, t, dist.base)
            if value is not None:
                assert inside(own, value) and not inside(other, value)


@pytest.mark.parametrize("skill", ["scoop", "catch"])
def test_start_offsets_lie_past_the_nodes_range(skill):
    dist = TaskDistribution.for_skill(skill)
    base = dist.base
    for split, low, high in (("train", 0.0, 0.01), ("heldout", 0.015, 0.03)):
        for t in family("start offset").tasks(dist, np.random.default_rng(1), 20, split=split):
            past_egg = np.max(np.abs(np.subtract(t.egg_offset, base.egg_offset))) - base.egg_offset_range
            past_blade = np.max(np.abs(np.subtract(t.spatula_pose[:2], base.spatula_pose[:2]))) - max(
                base.spatula_pose_range[:2]
            )
            assert low - 1e-9 <= past_egg <= high + 1e-9 and low - 1e-9 <= past_blade <= high + 1e-9
            assert t.egg_offset_range == 0 and t.spatula_pose_range[:2] == (0.0, 0.0)


@pytest.mark.parametrize("skill", ["flip", "toss", "serve"])
def test_start_offsets_move_the_blade_with_the_egg_on_it(skill):
    """An egg that starts on the blade keeps its offset from the blade; the blade's start moves."""
    dist = TaskDistribution.for_skill(skill)
    for t in family("start offset").tasks(dist, np.random.default_rng(1), 20, split="heldout"):
        assert t.egg_offset == dist.base.egg_offset and t.egg_offset_range == dist.base.egg_offset_range
        assert t.spatula_pose[:2] != dist.base.spatula_pose[:2]


def test_a_toss_instruction_is_no_wrong_skill_for_a_flip():
    """A caught toss is also a flip (upside down, at rest): the wrong-skill family never asks a
    flip task for one, and asks a toss task for each of the other skills."""
    flip = family("wrong skill").tasks(TaskDistribution.for_skill("flip"), np.random.default_rng(4), 60)
    every_toss = set(PARAPHRASES["toss"]["train"] + PARAPHRASES["toss"]["heldout"])
    assert not {t.instruction for t in flip} & every_toss
    toss = family("wrong skill").tasks(TaskDistribution.for_skill("toss"), np.random.default_rng(4), 60)
    asked = {s for t in toss for s in SKILLS if t.instruction in PARAPHRASES[s]["heldout"]}
    assert asked == {"scoop", "flip", "catch", "serve", "season"}


def test_a_turned_serve_is_paraphrased_yolk_down():
    """A serve that starts turned over is asked for yolk down, in every paraphrase."""
    dist = TaskDistribution.for_skill("serve", egg_side_up="white")
    for split in ("train", "heldout"):
        tasks = family("paraphrase").tasks(dist, np.random.default_rng(0), 20, split=split)
        assert {t.instruction for t in tasks} <= set(PARAPHRASES["serve turned"][split])


def test_instructions_of_each_split_are_disjoint_and_held_out_ones_are_new():
    every_train = {p for key in PARAPHRASES for p in PARAPHRASES[key]["train"]}
    for skill in SKILLS:
        assert PARAPHRASES[skill]["train"][0] == INSTRUCTIONS[skill]
    for key in PARAPHRASES:
        assert not set(PARAPHRASES[key]["heldout"]) & every_train
    dist = TaskDistribution.for_skill("flip")
    said = {t.instruction for t in family("paraphrase").tasks(dist, np.random.default_rng(2), 40)}
    assert said == set(PARAPHRASES["flip"]["heldout"])
    wrong = family("wrong skill").tasks(dist, np.random.default_rng(2), 40)
    others = {p for s in ("scoop", "catch", "serve", "season") for p in PARAPHRASES[s]["heldout"]}
    assert {t.instruction for t in wrong} <= others and all(t.skill == "flip" for t in wrong)
    assert len({t.instruction for t in wrong}) >= 4


def test_training_tasks_mix_every_applicable_family():
    dist = TaskDistribution.for_skill("scoop")
    tasks = training_tasks(dist, np.random.default_rng(3), 300)
    assert any(t.disturbance_phase == "pan" for t in tasks)
    assert not any(t.disturbance_phase == "air" for t in tasks)  # no push in the air for a scoop
    assert any(t.action_latency == 1 for t in tasks) and not any(t.action_latency == 2 for t in tasks)
    assert any(t.egg_obs_noise > 0 for t in tasks) and any(
        t.instruction != dist.base.instruction for t in tasks
    )
    assert all(t.disturbance_force <= 0.8 for t in tasks)
    silent = training_tasks(dist, np.random.default_rng(3), 100, language=False)
    assert all(t.instruction == dist.base.instruction for t in silent)


def test_an_unknown_family_names_the_known_ones():
    with pytest.raises(KeyError, match="egg mass"):
        family("gravity")
