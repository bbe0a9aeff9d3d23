"""TaskSpec: serialisation round trips, per-skill defaults, and validation messages."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from robo_coevolve import SKILLS, TaskSpec, TaskSpecError
from robo_coevolve.task_spec import BLADE_START_SKILLS, INSTRUCTIONS, default_instruction


def _specs() -> list[TaskSpec]:
    return [
        TaskSpec(),
        TaskSpec.for_skill("scoop"),
        TaskSpec.for_skill("flip", egg_mass=0.07, egg_offset=(0.005, -0.004), seed=11),
        TaskSpec.for_skill(
            "catch",
            instruction="catch it",
            egg_velocity=(0.1, -0.2, 0.6),
            disturbance_force=1.5,
            pan_height=0.5,
            egg_size=1.2,
        ),
        TaskSpec.for_skill("toss", egg_offset=(-0.003, 0.006), servo_gain=0.8, seed=5),
    ]


# ----------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.skill)
def test_dict_round_trip(spec):
    data = spec.to_dict()
    assert set(data) == {f.name for f in dataclasses.fields(TaskSpec)}
    # JSON-safe: tuples become lists.
    assert isinstance(data["spatula_pose"], list)
    assert TaskSpec.from_dict(data) == spec
    assert hash(TaskSpec.from_dict(data)) == hash(spec)


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.skill)
def test_json_round_trip(spec):
    text = spec.to_json()
    assert json.loads(text) == spec.to_dict()
    assert TaskSpec.from_json(text) == spec
    assert TaskSpec.from_dict(json.loads(text)) == spec


def test_tuple_fields_are_normalised_to_float_tuples():
    spec = TaskSpec(egg_offset=[0, 0], spatula_pose=[-0.1, 0, 0, 0, 0])
    assert spec.egg_offset == (0.0, 0.0)
    assert all(isinstance(v, float) for v in spec.spatula_pose)
    assert spec == TaskSpec(egg_offset=(0.0, 0.0), spatula_pose=(-0.1, 0.0, 0.0, 0.0, 0.0))


def test_replace_returns_validated_copy():
    spec = TaskSpec.for_skill("flip")
    heavier = spec.replace(egg_mass=0.1)
    assert heavier.egg_mass == 0.1 and spec.egg_mass == 0.05
    with pytest.raises(TaskSpecError, match="egg_mass"):
        spec.replace(egg_mass=1.0)


# ----------------------------------------------------------------------------- defaults
EXPECTED_DEFAULTS = {
    "scoop": dict(
        egg_offset=(0.0, 0.0),
        egg_height=0.0,
        spatula_pose=(-0.125, 0.0, 0.0, 0.06, 0.0),
        horizon=3.0,
    ),
    "flip": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.01,
        egg_height=0.0,
        spatula_pose=(0.0, 0.0, 0.08, 0.0, 0.0),
        horizon=3.0,
    ),
    "catch": dict(
        egg_height=0.15,
        egg_velocity=(0.0, 0.0, 0.5),
        egg_spin_range=3.0,
        spatula_pose=(-0.06, 0.0, 0.03, 0.0, 0.0),
        horizon=2.0,
    ),
    "toss": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.01,
        egg_height=0.0,
        spatula_pose=(0.0, 0.0, 0.08, 0.0, 0.0),
        horizon=2.0,
    ),
    "serve": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.01,
        egg_height=0.0,
        spatula_pose=(0.0, 0.0, 0.08, 0.0, 0.0),
        egg_side_up="yolk",
        horizon=3.0,
    ),
    "season": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.01,
        spatula_pose=(0.16, 0.0, 0.06, 0.0, 0.0),
        egg_side_up="yolk",
        horizon=4.0,
    ),
}


@pytest.mark.parametrize("skill", SKILLS)
def test_for_skill_defaults(skill):
    spec = TaskSpec.for_skill(skill)
    assert spec.skill == skill
    assert spec.instruction == INSTRUCTIONS[skill] == default_instruction(skill)
    for name, value in EXPECTED_DEFAULTS[skill].items():
        assert getattr(spec, name) == pytest.approx(value), name


def test_skills_have_distinct_defaults():
    specs = [TaskSpec.for_skill(s) for s in SKILLS if s not in BLADE_START_SKILLS[1:]]
    assert len({(s.spatula_pose, s.horizon) for s in specs}) == len(specs)
    assert len({s.instruction for s in map(TaskSpec.for_skill, SKILLS)}) == len(SKILLS)


def test_new_skills_come_last_and_start_where_flip_does():
    """One-hots of the older skills keep their indices; a toss and a serve start from a flip's
    start state (the egg resting on the blade, where a scoop ends)."""
    assert SKILLS == ("scoop", "flip", "catch", "toss", "serve", "season")
    assert BLADE_START_SKILLS == ("flip", "toss", "serve")
    flip = TaskSpec.for_skill("flip")
    start = ("egg_offset", "egg_offset_range", "egg_height", "spatula_pose", "spatula_pose_range")
    for skill in ("toss", "serve"):
        assert all(getattr(flip, f) == getattr(TaskSpec.for_skill(skill), f) for f in start)
    assert TaskSpec.for_skill("toss").horizon < flip.horizon


def test_a_serve_names_the_side_up_and_only_a_serve_or_a_season_starts_turned_over():
    turned = TaskSpec.for_skill("serve", egg_side_up="white")
    assert "yolk down" in turned.instruction and "yolk up" in TaskSpec.for_skill("serve").instruction
    with pytest.raises(TaskSpecError, match="egg_side_up='white' is for serve and season tasks only"):
        TaskSpec.for_skill("flip", egg_side_up="white")
    assert TaskSpec.for_skill("season", egg_side_up="white").egg_side_up == "white"
    with pytest.raises(TaskSpecError, match="egg_side_up='sunny' is unknown: choose one of yolk, white"):
        TaskSpec.for_skill("serve", egg_side_up="sunny")
    assert TaskSpec.from_dict(turned.to_dict()) == turned


def test_a_season_starts_on_the_plate_and_keeps_the_egg_on_it():
    with pytest.raises(TaskSpecError, match="puts the egg outside the plate"):
        TaskSpec.for_skill("season", egg_offset=(0.03, 0.0))
    assert TaskSpec.for_skill("season", egg_offset=(0.02, 0.0)).egg_offset == (0.02, 0.0)
    assert TaskSpec.for_skill("season").with_salt and not TaskSpec.for_skill("serve").with_salt
    with pytest.raises(TaskSpecError, match="with_salt=False: a season needs the salt shaker"):
        TaskSpec.for_skill("season", with_salt=False)
    with pytest.raises(TaskSpecError, match="with_salt must be true or false"):
        TaskSpec.for_skill("scoop", with_salt=1)


def test_for_skill_overrides_keep_other_defaults():
    spec = TaskSpec.for_skill("catch", egg_height=0.2, egg_mass=0.08)
    assert spec.egg_height == 0.2
    assert spec.egg_mass == 0.08
    assert spec.egg_velocity == (0.0, 0.0, 0.5)
    assert spec.horizon == 2.0


def test_custom_instruction_is_kept():
    assert TaskSpec.for_skill("flip", instruction="turn it").instruction == "turn it"


# ----------------------------------------------------------------------------- validation
def test_error_is_a_value_error():
    assert issubclass(TaskSpecError, ValueError)


@pytest.mark.parametrize("mass", [-0.05, 0.0, 5.0])
def test_bad_egg_mass(mass):
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_mass") as err:
        TaskSpec(egg_mass=mass)
    assert "kg" in str(err.value)


def test_unknown_skill_constructor():
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.skill='fry'") as err:
        TaskSpec(skill="fry")
    for skill in SKILLS:
        assert skill in str(err.value)


def test_unknown_skill_for_skill():
    with pytest.raises(TaskSpecError, match=r"skill 'fry'") as err:
        TaskSpec.for_skill("fry")
    for skill in SKILLS:
        assert skill in str(err.value)


@pytest.mark.parametrize("skill", ["scoop", "catch"])
def test_egg_outside_pan(skill):
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_offset") as err:
        TaskSpec.for_skill(skill, egg_offset=(0.12, 0.0))
    assert "outside the pan" in str(err.value)


def test_egg_offset_range_pushes_egg_outside_pan():
    TaskSpec.for_skill("scoop", egg_offset=(0.07, 0.0), egg_offset_range=0.0)
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_offset"):
        TaskSpec.for_skill("scoop", egg_offset=(0.07, 0.0), egg_offset_range=0.02)


def test_bigger_egg_needs_more_room():
    TaskSpec.for_skill("scoop", egg_offset=(0.075, 0.0), egg_offset_range=0.0, egg_size=1.0)
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_offset"):
        TaskSpec.for_skill("scoop", egg_offset=(0.075, 0.0), egg_offset_range=0.0, egg_size=1.4)


@pytest.mark.parametrize("skill", ["flip", "toss", "serve"])
@pytest.mark.parametrize("offset", [(0.03, 0.0), (0.0, -0.025)])
def test_offset_off_blade(skill, offset):
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_offset") as err:
        TaskSpec.for_skill(skill, egg_offset=offset)
    assert "blade" in str(err.value) and skill in str(err.value)


@pytest.mark.parametrize(
    "pose, index",
    [
        ((0.5, 0.0, 0.0, 0.0, 0.0), 0),
        ((0.0, -0.4, 0.0, 0.0, 0.0), 1),
        ((0.0, 0.0, 0.5, 0.0, 0.0), 2),
        ((0.0, 0.0, 0.1, 1.5, 0.0), 3),
        ((0.0, 0.0, 0.1, 0.0, -4.0), 4),
        ((0.295, 0.0, 0.1, 0.0, 0.0), 0),  # inside, but the +-0.01 range leaves the reach
    ],
)
def test_spatula_pose_out_of_reach(pose, index):
    with pytest.raises(TaskSpecError, match=rf"TaskSpec\.spatula_pose\[{index}\]") as err:
        TaskSpec.for_skill("scoop", spatula_pose=pose, spatula_pose_range=(0.01, 0.01, 0.0, 0.0, 0.0))
    assert "reach" in str(err.value)


def test_negative_spatula_pose_range():
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.spatula_pose_range\[1\]"):
        TaskSpec.for_skill("scoop", spatula_pose_range=(0.01, -0.01, 0.0, 0.0, 0.0))


@pytest.mark.parametrize(
    "field, value",
    [
        ("egg_mass", math.nan),
        ("pan_height", math.inf),
        ("horizon", -math.inf),
        ("egg_offset", (0.0, math.nan)),
        ("spatula_pose", (-0.125, 0.0, math.inf, 0.0, 0.0)),
        ("egg_velocity", (0.0, math.nan, 0.0)),
    ],
)
def test_non_finite(field, value):
    with pytest.raises(TaskSpecError, match=rf"TaskSpec\.{field}=.*not finite"):
        TaskSpec.for_skill("scoop", **{field: value})


@pytest.mark.parametrize(
    "field, value, n",
    [
        ("egg_offset", (0.0, 0.0, 0.0), 2),
        ("egg_offset", (0.0,), 2),
        ("egg_velocity", (0.0, 0.0), 3),
        ("egg_velocity_range", (0.0, 0.0, 0.0, 0.0), 3),
        ("spatula_pose", (-0.125, 0.0, 0.0, 0.06), 5),
        ("spatula_pose_range", (0.0,) * 6, 5),
    ],
)
def test_wrong_tuple_length(field, value, n):
    with pytest.raises(TaskSpecError, match=rf"TaskSpec\.{field} must have {n} values, got {len(value)}"):
        TaskSpec(**{field: value})


@pytest.mark.parametrize(
    "field, value",
    [
        ("egg_size", 2.0),
        ("egg_pan_friction", 0.0),
        ("egg_blade_friction", 10.0),
        ("pan_height", 0.1),
        ("egg_height", -0.01),
        ("horizon", 0.0),
        ("disturbance_force", -1.0),
        ("disturbance_duration", 2.0),
        ("egg_yaw_range", 4.0),
        ("egg_spin_range", -1.0),
        ("egg_offset_range", -0.01),
    ],
)
def test_scalar_out_of_range(field, value):
    with pytest.raises(TaskSpecError, match=rf"TaskSpec\.{field}={value} is outside"):
        TaskSpec(**{field: value})


def test_egg_velocity_range_out_of_range():
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_velocity_range\[2\]"):
        TaskSpec(egg_velocity_range=(0.0, 0.0, 5.0))


def test_from_dict_unknown_key():
    data = {**TaskSpec.for_skill("flip").to_dict(), "egg_colour": "brown", "yolk_count": 2}
    with pytest.raises(TaskSpecError, match=r"egg_colour") as err:
        TaskSpec.from_dict(data)
    assert "yolk_count" in str(err.value)
    assert "egg_mass" in str(err.value)  # lists the known fields


def test_from_dict_validates_values():
    data = {**TaskSpec().to_dict(), "egg_mass": -1.0}
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_mass"):
        TaskSpec.from_dict(data)
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_mass"):
        TaskSpec.from_json(json.dumps(data))


def test_from_dict_does_not_mutate_input():
    data = TaskSpec.for_skill("catch").to_dict()
    before = json.dumps(data, sort_keys=True)
    TaskSpec.from_dict(data)
    assert json.dumps(data, sort_keys=True) == before


def test_scalar_for_tuple_field():
    with pytest.raises(TaskSpecError, match=r"TaskSpec\.egg_offset"):
        TaskSpec(egg_offset=0.1)
