"""TaskSpec: everything that varies one egg-flip task, as a frozen, serialisable value.

A TaskSpec names the skill and its instruction, the distributions the initial state is drawn from
(nominal values plus uniform half-widths), the egg's physical properties, the pan height, the
disturbances, the horizon and the seed. It is the unit that the task synthesizer mutates and the
skill library records, so it validates itself on construction: a bad value raises a
``TaskSpecError`` that names the field and the allowed range, before any simulation runs.

Units are SI: metres, kilograms, radians, seconds, newtons. Positions are measured from the pan
surface centre (x forward along the spatula's push direction, z up).
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import string
from dataclasses import dataclass
from typing import Any

SKILLS = (
    "scoop",
    "flip",
    "catch",
    "toss",
    "serve",
    "season",
)  # append new skills last: the one-hots keep their indices
# Skills whose egg starts resting on the blade (its offset is from the blade centre, not the pan's).
BLADE_START_SKILLS = ("flip", "toss", "serve")
# Skills whose egg starts on the plate (its offset is from the plate centre), where a serve leaves it.
PLATE_START_SKILLS = ("season",)
# Skills whose scene must have the salt shaker and its grains (robo_coevolve.env.salt).
SALT_SKILLS = ("season",)
# Which face of the egg is up at the start: the yolk (as fried), or the white (turned over). Only a
# serve or a season may start turned over: every other skill's predicate reads the egg's absolute
# side.
TURNABLE_SKILLS = ("serve", "season")
EGG_SIDES = ("yolk", "white")
# When a push may fire: any time, or only while the egg lies on the pan, on the blade, in the air.
DISTURBANCE_PHASES = ("any", "pan", "blade", "air")
MAX_ACTION_LATENCY = 2  # control steps

# What an instruction may hold: the environment's gymnasium Text space uses the same limits.
_PUNCTUATION = ",.'-!?"
INSTRUCTION_CHARSET = string.ascii_letters + string.digits + " " + _PUNCTUATION
MAX_INSTRUCTION_LENGTH = 200
_TUPLE_FIELDS = {
    "egg_offset": 2,
    "egg_velocity": 3,
    "egg_velocity_range": 3,
    "spatula_pose": 5,
    "spatula_pose_range": 5,
}

INSTRUCTIONS = {
    "scoop": "scoop the fried egg off the pan",
    "flip": "flip the fried egg over",
    "catch": "catch the falling egg on the spatula",
    "toss": "toss the egg up, turn it over and catch it on the spatula",
    "serve": "serve the egg on the plate, yolk up",
    "season": "season the egg on the plate with a pinch of salt",
}
SERVE_TURNED_INSTRUCTION = "serve the egg on the plate, yolk down"


def default_instruction(skill: str, egg_side_up: str = "yolk") -> str:
    """The instruction a task of ``skill`` gets unless it names one: a serve names the side up."""
    if skill == "serve" and egg_side_up == "white":
        return SERVE_TURNED_INSTRUCTION
    return INSTRUCTIONS[skill]


# Scene geometry the bounds below are derived from (envs/egg_flip/scene.xml).
PAN_RADIUS = 0.13  # m, inner radius of the pan surface
PLATE_CENTRE = (0.25, 0.0)  # m, the serving plate's centre from the pan's, its surface level with it
PLATE_RADIUS = 0.08  # m, of the plate's flat
EGG_RIM_RADIUS = 0.045  # m, at egg_size = 1
# The season scene's salt shaker (robo_coevolve.env.salt): the scorer measures its grains against it.
GRAINS = 120
SHAKER_RADIUS = 0.018  # m, inside
SHAKER_HEIGHT = 0.06  # m, inside, from the base's top to the cap's underside
SHAKER_WALL = 0.002  # m, thickness of the wall and the base (the cap: 0.003)
HOLE_RADIUS = 0.0035  # m, of the cap's one hole: a few grains at a time
# Where the shaker's base stands in its rack, from the pan surface centre: beside the plate, off the
# line from the pan to the plate, low enough for the blade to dock under it.
RACK_SEAT = (0.12, 0.17, 0.06)
BLADE_THICKNESS = 0.003  # m: the spatula's origin is the blade's bottom centre, the shaker sits on top
# The spatula pose that docks the blade's top under the shaker's base in the rack.
DOCK_POSE = (RACK_SEAT[0], RACK_SEAT[1], RACK_SEAT[2] - BLADE_THICKNESS, 0.0, 0.0)
SPATULA_LOW = (-0.3, -0.3, -0.02, -1.2, -3.5)  # x, y, z, pitch, roll joint limits
SPATULA_HIGH = (0.3, 0.3, 0.45, 1.2, 3.5)

# The egg resting on the blade (offset from the blade centre), the blade held above the pan: where
# a scoop ends, and where flip, toss and serve start.
_ON_RAISED_BLADE: dict[str, Any] = dict(
    egg_offset=(0.0, 0.0),
    egg_offset_range=0.01,
    egg_height=0.0,
    spatula_pose=(0.0, 0.0, 0.08, 0.0, 0.0),
    spatula_pose_range=(0.02, 0.02, 0.01, 0.0, 0.0),
)

# Skill-specific nominal start states; any field can be overridden by the caller.
_SKILL_DEFAULTS: dict[str, dict[str, Any]] = {
    # Egg on the pan, blade resting on the pan behind it, tip slightly down.
    "scoop": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.02,
        egg_height=0.0,
        spatula_pose=(-0.125, 0.0, 0.0, 0.06, 0.0),
        spatula_pose_range=(0.01, 0.01, 0.0, 0.02, 0.0),
        horizon=3.0,
    ),
    "flip": dict(_ON_RAISED_BLADE, horizon=3.0),
    # Egg tossed up above the pan, spatula waiting off to one side below it.
    "catch": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.02,
        egg_height=0.15,
        egg_velocity=(0.0, 0.0, 0.5),
        egg_velocity_range=(0.1, 0.1, 0.1),
        egg_spin_range=3.0,
        spatula_pose=(-0.06, 0.0, 0.03, 0.0, 0.0),
        spatula_pose_range=(0.01, 0.01, 0.01, 0.0, 0.0),
        horizon=2.0,
    ),
    # A throw, a turn in the air and a catch take well under a second; the rest of the horizon
    # shows the egg held still.
    "toss": dict(_ON_RAISED_BLADE, horizon=2.0),
    # The plate is beside the pan, where the blade points. Carrying the egg there, laying it down
    # and drawing the blade out takes about 1.5 s.
    "serve": dict(_ON_RAISED_BLADE, horizon=3.0),
    # The egg lies on the plate and the blade is drawn back over the gap to the pan, as a serve
    # leaves them; the shaker stands in its rack (robo_coevolve.env.salt). Docking at it, carrying
    # it over the egg, turning it over, shaking and letting the salt land take about 3 s.
    "season": dict(
        egg_offset=(0.0, 0.0),
        egg_offset_range=0.01,
        egg_height=0.0,
        spatula_pose=(0.16, 0.0, 0.06, 0.0, 0.0),
        spatula_pose_range=(0.02, 0.02, 0.01, 0.0, 0.0),
        horizon=4.0,
        with_salt=True,
    ),
}


class TaskSpecError(ValueError):
    """A TaskSpec field is invalid; the message names the field and what is allowed."""


@dataclass(frozen=True)
class TaskSpec:
    """One task variant. Build it with :meth:`for_skill` to get the skill's default start state.

    Attributes:
        skill: one of ``SKILLS``.
        instruction: the language instruction given to the policy ("" means the skill's default).
        egg_offset: (x, y) m of the egg's centre: from the pan centre for scoop and catch, from
            the blade centre for flip, toss and serve (``BLADE_START_SKILLS``), from the plate
            centre for season (``PLATE_START_SKILLS``).
        egg_side_up: which face is up at the start, "yolk" or "white" (turned over; serve and
            season only).
        egg_offset_range: m, uniform half-width on each of x and y.
        egg_yaw_range: rad, uniform half-width of the egg's yaw about z.
        egg_height: m above the pan surface at the start (catch: the toss height).
        egg_velocity: (vx, vy, vz) m/s at the start (catch).
        egg_velocity_range: m/s, uniform half-widths of the start velocity.
        egg_spin_range: rad/s, uniform half-width of each start angular velocity component.
        spatula_pose: (x, y, z, pitch, roll) of the blade centre, m and rad, from the pan surface
            centre; z = 0 is the blade lying on the pan.
        spatula_pose_range: uniform half-widths of the spatula pose.
        egg_mass: kg, white plus yolk.
        egg_size: scale of the egg's footprint and thickness (1 = 9 cm rim diameter, 7.5 mm tall).
        egg_pan_friction: sliding friction between the egg and the pan.
        egg_blade_friction: sliding friction between the egg and the blade.
        pan_height: m, height of the pan surface above the floor.
        disturbance_force: N, magnitude of one horizontal push on the egg lasting
            ``disturbance_duration`` at a random time of the episode (0 = none).
        disturbance_duration: s.
        disturbance_phase: when the push may fire: "any" (at its random time) or "pan", "blade",
            "air": at the first control step from its random time on where the egg is in that phase.
        servo_gain: scale of the spatula actuators' position gains (1 = the scene's).
        action_latency: control steps (0 to 2) by which the executed command lags the action.
        egg_obs_noise: std of Gaussian noise on the *observed* egg state, fresh each step: m on
            the position; on the orientation, the same displacement of the egg's rim (std /
            ``EGG_RIM_RADIUS`` rad); on the velocities, that noise per 0.1 s (m/s, rad/s).
        egg_obs_dropout: s for which the observed egg state freezes, from a random time.
        horizon: s, episode length.
        seed: default seed for the start-state draw when ``reset`` is given none.
        with_salt: the scene has the salt shaker in its rack and its grains (a season's always;
            a recipe's that ends in a season, from its first stage on).
    """

    skill: str = "scoop"
    instruction: str = ""
    egg_offset: tuple[float, float] = (0.0, 0.0)
    egg_offset_range: float = 0.02
    egg_side_up: str = "yolk"
    egg_yaw_range: float = math.pi
    egg_height: float = 0.0
    egg_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    egg_velocity_range: tuple[float, float, float] = (0.0, 0.0, 0.0)
    egg_spin_range: float = 0.0
    spatula_pose: tuple[float, float, float, float, float] = (-0.125, 0.0, 0.0, 0.06, 0.0)
    spatula_pose_range: tuple[float, float, float, float, float] = (0.01, 0.01, 0.0, 0.02, 0.0)
    egg_mass: float = 0.05
    egg_size: float = 1.0
    egg_pan_friction: float = 1.2
    egg_blade_friction: float = 0.4
    pan_height: float = 0.45
    disturbance_force: float = 0.0
    disturbance_duration: float = 0.05
    disturbance_phase: str = "any"
    servo_gain: float = 1.0
    action_latency: int = 0
    egg_obs_noise: float = 0.0
    egg_obs_dropout: float = 0.0
    horizon: float = 3.0
    seed: int = 0
    with_salt: bool = False

    @classmethod
    def for_skill(cls, skill: str, **overrides: Any) -> TaskSpec:
        """The default task of ``skill`` with ``overrides`` applied (field names as above)."""
        if skill not in SKILLS:
            raise TaskSpecError(f"unknown skill {skill!r}: choose one of {', '.join(SKILLS)}")
        return cls(skill=skill, **{**_SKILL_DEFAULTS[skill], **overrides})

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _TUPLE_FIELDS:
                n = _TUPLE_FIELDS[f.name]
                if (
                    isinstance(value, str | bytes)
                    or not hasattr(value, "__len__")
                    or not all(_is_number(v) for v in value)
                ):
                    raise TaskSpecError(f"TaskSpec.{f.name} must be a sequence of {n} numbers, got {value!r}")
                object.__setattr__(self, f.name, tuple(float(v) for v in value))
            elif f.name in ("skill", "instruction", "disturbance_phase", "egg_side_up"):
                if not isinstance(value, str):
                    raise TaskSpecError(f"TaskSpec.{f.name} must be a string, got {value!r}")
            elif f.name == "with_salt":
                if not isinstance(value, bool):
                    raise TaskSpecError(f"TaskSpec.with_salt must be true or false, got {value!r}")
            elif f.name in ("seed", "action_latency"):
                if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
                    raise TaskSpecError(f"TaskSpec.{f.name} must be a non-negative integer, got {value!r}")
                object.__setattr__(self, f.name, int(value))
            elif not _is_number(value):
                raise TaskSpecError(f"TaskSpec.{f.name} must be a number, got {value!r}")
            else:
                object.__setattr__(self, f.name, float(value))
        if not self.instruction and self.skill in INSTRUCTIONS:
            object.__setattr__(self, "instruction", default_instruction(self.skill, self.egg_side_up))
        self.validate()

    def validate(self) -> None:
        """Raise ``TaskSpecError`` naming the first invalid field and its allowed range."""
        if self.skill not in SKILLS:
            raise TaskSpecError(
                f"TaskSpec.skill={self.skill!r} is unknown: choose one of {', '.join(SKILLS)}"
            )
        for name, n in _TUPLE_FIELDS.items():
            _check_len(name, getattr(self, name), n)
        if len(self.instruction) > MAX_INSTRUCTION_LENGTH:
            raise TaskSpecError(
                f"TaskSpec.instruction has {len(self.instruction)} characters: at most "
                f"{MAX_INSTRUCTION_LENGTH} are allowed"
            )
        bad = sorted(set(self.instruction) - set(INSTRUCTION_CHARSET))
        if bad:
            raise TaskSpecError(
                f"TaskSpec.instruction {self.instruction!r} uses {bad}: only letters, digits, spaces "
                f"and {_PUNCTUATION!r} are allowed"
            )
        for name, value in dataclasses.asdict(self).items():
            if name in (
                "skill",
                "instruction",
                "seed",
                "disturbance_phase",
                "action_latency",
                "egg_side_up",
                "with_salt",
            ):
                continue
            for v in value if isinstance(value, tuple) else (value,):
                if not math.isfinite(v):
                    raise TaskSpecError(f"TaskSpec.{name}={value!r} is not finite")
        if self.egg_side_up not in EGG_SIDES:
            raise TaskSpecError(
                f"TaskSpec.egg_side_up={self.egg_side_up!r} is unknown: choose one of {', '.join(EGG_SIDES)}"
            )
        if self.egg_side_up != "yolk" and self.skill not in TURNABLE_SKILLS:
            raise TaskSpecError(
                f"TaskSpec.egg_side_up={self.egg_side_up!r} is for {' and '.join(TURNABLE_SKILLS)} "
                f"tasks only: a {self.skill} starts with the yolk up (leave egg_side_up at 'yolk')"
            )
        if self.skill in SALT_SKILLS and not self.with_salt:
            raise TaskSpecError(
                f"TaskSpec.with_salt=False: a {self.skill} needs the salt shaker in its scene (leave it true)"
            )
        _check_range("egg_mass", self.egg_mass, 0.01, 0.2, "kg")
        _check_range("egg_size", self.egg_size, 0.6, 1.4, "(scale)")
        _check_range("egg_pan_friction", self.egg_pan_friction, 0.05, 3.0, "")
        _check_range("egg_blade_friction", self.egg_blade_friction, 0.05, 3.0, "")
        _check_range("pan_height", self.pan_height, 0.2, 0.8, "m")
        _check_range("egg_height", self.egg_height, 0.0, 0.4, "m")
        _check_range("horizon", self.horizon, 0.1, 30.0, "s")
        _check_range("disturbance_force", self.disturbance_force, 0.0, 5.0, "N")
        _check_range("disturbance_duration", self.disturbance_duration, 0.0, 1.0, "s")
        if self.disturbance_phase not in DISTURBANCE_PHASES:
            raise TaskSpecError(
                f"TaskSpec.disturbance_phase={self.disturbance_phase!r} is unknown: choose one of "
                f"{', '.join(DISTURBANCE_PHASES)}"
            )
        _check_range("servo_gain", self.servo_gain, 0.2, 5.0, "(scale)")
        _check_range("action_latency", self.action_latency, 0, MAX_ACTION_LATENCY, "control steps")
        _check_range("egg_obs_noise", self.egg_obs_noise, 0.0, 0.05, "m")
        _check_range("egg_obs_dropout", self.egg_obs_dropout, 0.0, self.horizon, "s (up to the horizon)")
        _check_range("egg_yaw_range", self.egg_yaw_range, 0.0, math.pi, "rad")
        _check_range("egg_spin_range", self.egg_spin_range, 0.0, 30.0, "rad/s")
        _check_range("egg_offset_range", self.egg_offset_range, 0.0, 0.1, "m")
        for i, r in enumerate(self.egg_velocity_range):
            _check_range(f"egg_velocity_range[{i}]", r, 0.0, 3.0, "m/s")
        for i, (pose, half, lo, hi) in enumerate(
            zip(self.spatula_pose, self.spatula_pose_range, SPATULA_LOW, SPATULA_HIGH, strict=True)
        ):
            if half < 0:
                raise TaskSpecError(f"TaskSpec.spatula_pose_range[{i}]={half} must be >= 0")
            if pose - half < lo or pose + half > hi:
                raise TaskSpecError(
                    f"TaskSpec.spatula_pose[{i}]={pose} +- {half} leaves the spatula's reach "
                    f"[{lo}, {hi}]: move it inside or shrink spatula_pose_range[{i}]"
                )
        if self.skill not in BLADE_START_SKILLS:
            # The whole egg must start on its surface (a season's plate, else the pan), whatever the draw.
            surface, radius = (
                ("plate", PLATE_RADIUS) if self.skill in PLATE_START_SKILLS else ("pan", PAN_RADIUS)
            )
            reach = math.hypot(*self.egg_offset) + math.sqrt(2) * self.egg_offset_range
            limit = radius - EGG_RIM_RADIUS * self.egg_size
            if reach > limit:
                raise TaskSpecError(
                    f"TaskSpec.egg_offset={self.egg_offset} +- {self.egg_offset_range} puts the "
                    f"egg outside the {surface}: its centre must stay within {limit:.3f} m of the "
                    f"{surface} centre ({surface} radius {radius} m minus the egg's rim radius)"
                )
        else:
            reach = max(abs(v) for v in self.egg_offset) + self.egg_offset_range
            if reach > 0.02:
                raise TaskSpecError(
                    f"TaskSpec.egg_offset={self.egg_offset} +- {self.egg_offset_range} puts the "
                    f"egg off the blade: for {self.skill} keep it within 0.02 m of the blade centre"
                )

    # ----------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict; ``TaskSpec.from_dict(spec.to_dict()) == spec``."""
        out = dataclasses.asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        """Build from a dict (e.g. JSON or a Hydra config); unknown keys are an error."""
        data = dict(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TaskSpecError(f"unknown TaskSpec field(s) {unknown}: known fields are {sorted(known)}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TaskSpec:
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> TaskSpec:
        """A copy with ``changes`` applied and validated."""
        return dataclasses.replace(self, **changes)

    @property
    def observation_perturbed(self) -> bool:
        """Whether the observed egg state differs from the true one (noise or a dropout)."""
        return self.egg_obs_noise > 0 or self.egg_obs_dropout > 0


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_len(name: str, value: tuple, n: int) -> None:
    if len(value) != n:
        raise TaskSpecError(f"TaskSpec.{name} must have {n} values, got {len(value)}: {value!r}")


def _check_range(name: str, value: float, low: float, high: float, unit: str) -> None:
    if not low <= value <= high:
        raise TaskSpecError(f"TaskSpec.{name}={value} is outside [{low}, {high}] {unit}".rstrip())
