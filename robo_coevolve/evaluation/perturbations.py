"""Perturbation families of the robustness suite: each a way the world can differ from a node's
own tasks, with a *training* range and a disjoint *held-out* range of how much.

``family.tasks(distribution, rng, n, split)`` draws ``n`` tasks of a node's ``TaskDistribution``
(its start states, egg masses and seeds) and perturbs each by a value drawn from the split's
range: ``split="heldout"`` is what the robustness suite measures on, ``split="train"`` what a
stage that practises against perturbations may train on (``training_tasks`` draws a mix of every
family that applies to a skill). Every perturbation is a ``TaskSpec`` field, so a drawn task is
the whole perturbation: the same task gives the same push, noise and delays every time.

Families that change only what a policy observes (``observation``) cannot touch an open-loop
plan, which does not look; families that change the instruction (``language``) only mean
something to instruction-conditioned policies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import (
    BLADE_START_SKILLS,
    INSTRUCTIONS,
    PLATE_START_SKILLS,
    SERVE_TURNED_INSTRUCTION,
    SKILLS,
    TaskSpec,
)

SPLITS = ("train", "heldout")

# Instructions per skill and split: the training ones start with the skill's own instruction, the
# held-out ones are paraphrases no training split uses.
PARAPHRASES: dict[str, dict[str, tuple[str, ...]]] = {
    "scoop": {
        "train": (
            INSTRUCTIONS["scoop"],
            "slide the spatula under the egg and lift it",
            "pick the egg up with the spatula",
        ),
        "heldout": ("get the egg onto the spatula", "lift the fried egg out of the pan", "scoop up the egg"),
    },
    "flip": {
        "train": (INSTRUCTIONS["flip"], "turn the egg upside down", "flip the egg"),
        "heldout": (
            "toss the egg so it lands the other side up",
            "turn the fried egg over with the spatula",
            "give the egg a flip",
        ),
    },
    "catch": {
        "train": (INSTRUCTIONS["catch"], "catch the egg", "catch the egg as it falls"),
        "heldout": (
            "get under the falling egg and hold it",
            "stop the egg from landing in the pan",
            "hold the spatula under the dropping egg",
        ),
    },
    "toss": {
        "train": (
            INSTRUCTIONS["toss"],
            "toss the egg and catch it upside down",
            "throw the egg up and catch it flipped",
        ),
        "heldout": (
            "turn the egg over in mid air and catch it",
            "send the egg up so it turns over and land it on the spatula",
            "toss and catch the egg the other side up",
        ),
    },
    "serve": {
        "train": (INSTRUCTIONS["serve"], "put the egg on the plate yolk up", "plate the egg, yolk side up"),
        "heldout": (
            "lay the fried egg on the plate with the yolk on top",
            "move the egg onto the plate, yolk facing up",
            "serve it sunny side up",
        ),
    },
    "season": {
        "train": (INSTRUCTIONS["season"], "salt the egg on the plate", "sprinkle a little salt on the egg"),
        "heldout": (
            "give the fried egg a pinch of salt",
            "shake some salt over the egg",
            "season it lightly with salt",
        ),
    },
    # A serve that starts turned over (TaskSpec.egg_side_up = "white") names the other side.
    "serve turned": {
        "train": (
            SERVE_TURNED_INSTRUCTION,
            "put the egg on the plate yolk down",
            "plate the egg, white side up",
        ),
        "heldout": (
            "lay the fried egg on the plate with the yolk underneath",
            "move the egg onto the plate, yolk facing down",
            "serve it over easy, the white on top",
        ),
    },
}


def _phrases(task: TaskSpec) -> str:
    """The ``PARAPHRASES`` key of ``task``'s instruction: its skill, or a turned serve's."""
    return "serve turned" if task.skill == "serve" and task.egg_side_up == "white" else task.skill


@dataclass(frozen=True)
class Span:
    """Values drawn uniformly over the union of ``intervals`` ((low, high), ...), each interval
    in proportion to its length."""

    intervals: tuple[tuple[float, float], ...]

    def draw(self, rng: np.random.Generator) -> float:
        widths = np.array([high - low for low, high in self.intervals])
        low, high = self.intervals[int(rng.choice(len(widths), p=widths / widths.sum()))]
        return float(rng.uniform(low, high))

    def overlaps(self, other: Span) -> bool:
        return any(a < d and c < b for a, b in self.intervals for c, d in other.intervals)

    def __str__(self) -> str:
        return " or ".join(f"{low:g}-{high:g}" for low, high in self.intervals)


@dataclass(frozen=True)
class Choices:
    """One of ``values``, each as likely."""

    values: tuple

    def draw(self, rng: np.random.Generator) -> Any:
        return self.values[int(rng.integers(len(self.values)))]

    def overlaps(self, other: Choices) -> bool:
        return bool(set(self.values) & set(other.values))

    def __str__(self) -> str:
        return ", ".join(map(str, self.values))


# (a drawn task, the perturbation's value, the node's base task, rng) -> the perturbed task
Perturb = Callable[[TaskSpec, Any, TaskSpec, np.random.Generator], TaskSpec]


@dataclass(frozen=True)
class Family:
    """One kind of perturbation: ``perturb`` applies a value drawn from ``train`` or
    ``heldout`` (disjoint ranges, in ``unit``) to a task of a node.

    ``observation``: it changes only what a policy observes. ``language``: it changes the
    instruction. ``skills``: the skills it applies to (a push that waits for the egg to be in
    the air means nothing to a scoop)."""

    name: str
    doc: str
    unit: str
    train: Span | Choices
    heldout: Span | Choices
    perturb: Perturb
    observation: bool = False
    language: bool = False
    skills: tuple[str, ...] = SKILLS

    def __post_init__(self) -> None:
        if self.train.overlaps(self.heldout):
            raise ValueError(f"family {self.name!r}: its train and held-out ranges overlap")

    def tasks(
        self, distribution: TaskDistribution, rng: np.random.Generator, n: int, split: str = "heldout"
    ) -> list[TaskSpec]:
        """``n`` tasks of ``distribution``, each perturbed by a value of ``split``'s range."""
        if split not in SPLITS:
            raise ValueError(f"split={split!r}: choose one of {', '.join(SPLITS)}")
        values = self.train if split == "train" else self.heldout
        out = []
        for _ in range(n):
            task = distribution.sample(rng)
            out.append(self.perturb(task, values.draw(rng), distribution.base, rng))
        return out

    def applies_to(self, skill: str) -> bool:
        return skill in self.skills


def _push(phase: str) -> Perturb:
    def perturb(task, force, base, rng):
        return task.replace(disturbance_force=force, disturbance_phase=phase)

    return perturb


def _scaled(field: str) -> Perturb:
    """Set ``field`` to the base task's value times the drawn factor."""

    def perturb(task, scale, base, rng):
        return task.replace(**{field: getattr(base, field) * scale})

    return perturb


def _set(field: str) -> Perturb:
    def perturb(task, value, base, rng):
        return task.replace(**{field: value})

    return perturb


def _past_edge(centre, half_width: float, extra: float, rng: np.random.Generator) -> np.ndarray:
    """A point ``extra`` beyond the square ``centre +- half_width`` (on the square of half-width
    ``half_width + extra``, uniformly along its sides)."""
    side, along = int(rng.integers(4)), rng.uniform(-1.0, 1.0)
    unit = [(1.0, along), (-1.0, along), (along, 1.0), (along, -1.0)][side]
    return np.asarray(centre, dtype=np.float64) + (half_width + extra) * np.asarray(unit)


def _start_offset(task: TaskSpec, extra: float, base: TaskSpec, rng) -> TaskSpec:
    """The spatula's start (x, y) and, where the egg starts on the pan or in the air, the egg's,
    ``extra`` m past the node's start range (square in x and y), each in its own random direction.
    (An egg on the blade or the plate must stay on it; the nodes' egg yaw is drawn over the whole
    turn: no yaw lies past it.)"""
    pose = list(base.spatula_pose)
    half = list(base.spatula_pose_range)
    pose[:2] = _past_edge(pose[:2], max(half[:2]), extra, rng)
    half[:2] = (0.0, 0.0)
    changes: dict[str, Any] = {"spatula_pose": pose, "spatula_pose_range": half}
    if task.skill not in BLADE_START_SKILLS + PLATE_START_SKILLS:
        changes["egg_offset"] = _past_edge(base.egg_offset, base.egg_offset_range, extra, rng)
        changes["egg_offset_range"] = 0.0
    return task.replace(**changes)


def _paraphrase(task: TaskSpec, index: int, base: TaskSpec, rng) -> TaskSpec:
    key = _phrases(task)
    split = "train" if index < len(PARAPHRASES[key]["train"]) else "heldout"
    return task.replace(instruction=_instruction(key, split, index))


# Skills whose success is also a success of the key skill: a caught toss lies upside down and at
# rest, which is a flip, so a toss instruction on a flip task is no wrong instruction.
_ALSO_SUCCEEDS = {"flip": ("toss",)}


def _wrong_skill(task: TaskSpec, index: int, base: TaskSpec, rng) -> TaskSpec:
    """Another skill's instruction (that skill drawn from ``rng``) on this skill's task; never a
    skill whose success would count as this one's (``_ALSO_SUCCEEDS``)."""
    others = [s for s in SKILLS if s != task.skill and s not in _ALSO_SUCCEEDS.get(task.skill, ())]
    other = others[int(rng.integers(len(others)))]
    split = "train" if index < len(PARAPHRASES[other]["train"]) else "heldout"
    return task.replace(instruction=_instruction(other, split, index))


def _instruction(key: str, split: str, index: int) -> str:
    """Paraphrase ``index`` of ``PARAPHRASES[key]``, counting the training ones first."""
    train = PARAPHRASES[key]["train"]
    return train[index] if split == "train" else PARAPHRASES[key]["heldout"][index - len(train)]


_PUSH_TRAIN, _PUSH_HELDOUT = Span(((0.1, 0.4),)), Span(((0.5, 1.0),))
_N_TRAIN = len(PARAPHRASES["scoop"]["train"])
_N_HELDOUT = len(PARAPHRASES["scoop"]["heldout"])
_TRAIN_PHRASES = Choices(tuple(range(_N_TRAIN)))
_HELDOUT_PHRASES = Choices(tuple(range(_N_TRAIN, _N_TRAIN + _N_HELDOUT)))

FAMILIES: tuple[Family, ...] = (
    Family(
        "push",
        "a sideways push on the egg for 0.05 s at a random time",
        "N",
        _PUSH_TRAIN,
        _PUSH_HELDOUT,
        _push("any"),
    ),
    Family(
        "push on pan",
        "the push, once the egg lies on the pan before the blade reaches it (friction holds it there)",
        "N",
        Span(((0.25, 0.8),)),
        Span(((1.0, 2.0),)),
        _push("pan"),
        skills=("scoop",),
    ),
    Family(
        "push on blade",
        "the push, once the egg lies on the blade alone",
        "N",
        _PUSH_TRAIN,
        _PUSH_HELDOUT,
        _push("blade"),
    ),
    Family(
        "push in air",
        "the push, once the egg is in the air",
        "N",
        _PUSH_TRAIN,
        _PUSH_HELDOUT,
        _push("air"),
        skills=("flip", "catch", "toss"),
    ),
    Family(
        "egg mass",
        "the egg's mass, times the node's nominal one",
        "x",
        Span(((0.8, 1.2),)),
        Span(((0.4, 0.6), (1.4, 1.8))),
        _scaled("egg_mass"),
    ),
    Family(
        "pan friction",
        "the egg-pan friction, times the nominal one",
        "x",
        Span(((0.75, 1.25),)),
        Span(((0.3, 0.6), (1.5, 2.0))),
        _scaled("egg_pan_friction"),
    ),
    Family(
        "blade friction",
        "the egg-blade friction, times the nominal one",
        "x",
        Span(((0.75, 1.25),)),
        Span(((0.4, 0.6), (1.5, 2.5))),
        _scaled("egg_blade_friction"),
    ),
    Family(
        "servo gain",
        "the spatula servos' position gains, times the scene's",
        "x",
        Span(((0.75, 1.3),)),
        Span(((0.25, 0.5), (2.0, 4.0))),
        _set("servo_gain"),
    ),
    Family(
        "latency",
        "control steps by which the executed command lags the action",
        "steps",
        Choices((1,)),
        Choices((2,)),
        _set("action_latency"),
    ),
    Family(
        "egg obs noise",
        "std of the noise on the observed egg state (TaskSpec.egg_obs_noise)",
        "m",
        Span(((0.001, 0.003),)),
        Span(((0.005, 0.01),)),
        _set("egg_obs_noise"),
        observation=True,
    ),
    Family(
        "egg obs dropout",
        "the observed egg state freezes for this long at a random time",
        "s",
        Span(((0.02, 0.06),)),
        Span(((0.1, 0.2),)),
        _set("egg_obs_dropout"),
        observation=True,
    ),
    Family(
        "start offset",
        "the spatula's (and, on the pan or in the air, the egg's) start this far past the node's start range",
        "m",
        Span(((0.0, 0.01),)),
        Span(((0.015, 0.03),)),
        _start_offset,
    ),
    Family(
        "paraphrase",
        "the instruction said another way (held out: paraphrases no training split uses)",
        "paraphrase",
        _TRAIN_PHRASES,
        _HELDOUT_PHRASES,
        _paraphrase,
        language=True,
    ),
    Family(
        "wrong skill",
        "another skill's instruction on this skill's task: success must be low",
        "paraphrase",
        _TRAIN_PHRASES,
        _HELDOUT_PHRASES,
        _wrong_skill,
        language=True,
    ),
)
NAMES = tuple(f.name for f in FAMILIES)


def family(name: str) -> Family:
    """The family called ``name``; a ``KeyError`` naming the known ones if none is."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(f"unknown perturbation family {name!r}: choose from {', '.join(NAMES)}")


def training_tasks(
    distribution: TaskDistribution,
    rng: np.random.Generator,
    n: int,
    language: bool = True,
    families: Sequence[Family] = FAMILIES,
) -> list[TaskSpec]:
    """``n`` tasks of ``distribution``, each perturbed by a family drawn uniformly from those of
    ``families`` that apply to its skill (the instruction ones only with ``language``), with a
    value from the family's training range."""
    usable = [f for f in families if f.applies_to(distribution.skill) and (language or not f.language)]
    if not usable:
        raise ValueError(f"no perturbation family applies to {distribution.skill}")
    picks = rng.integers(len(usable), size=n)
    return [usable[int(k)].tasks(distribution, rng, 1, split="train")[0] for k in picks]
