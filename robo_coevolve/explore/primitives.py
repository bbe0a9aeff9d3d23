"""Motion primitives: parametric families of spatula motions, one family per kind of skill.

The **base** family (scoop, flip, catch) is a keyframe spline (``motion.keyframes.KeyframeMotion``)
through six phases, each shaped by named parameters:

1. **approach**: from the start pose to a pre-pose near the *anchor* (where the egg is), with an
   approach offset, height and blade pitch, in ``approach_time`` s;
2. **push**: slide ``push_distance`` m forward at that height in ``push_time`` s (a scoop slides
   under the egg; a flip or catch pushes 0 and just waits);
3. **lift**: raise the blade ``lift_height`` m (negative: give way under a falling egg) and pitch
   it to ``lift_pitch`` in ``lift_time`` s;
4. **toss**: roll the wrist to ``toss_roll`` rad while rising ``toss_rise`` m in ``toss_time`` s
   (a flip rolls about 2 rad either way; a scoop keeps the blade level);
5. **recover**: roll back level in ``recover_time`` s;
6. **settle**: move ``retreat_dx`` m and hold.

The anchor is the egg's position in the first observation or, for an egg in flight, the point where
its ballistic path comes down through ``meet_height`` m: the explorer reads the egg's state the
way a perception system would, and nothing else about the simulator.

The **throw** family (toss) throws the egg from the blade and catches it, in five phases:

1. **wait** ``wait_time`` s at the start pose;
2. **throw**: move the blade ``throw_rise`` m up (and ``throw_dx``, ``throw_dy``) while pitching it
   to ``throw_pitch`` and rolling it to ``toss_roll``, in ``throw_time`` s: a fast, short move
   launches the egg, the roll sets it spinning;
3. **fall**: bring the blade level to the catch pose, ``catch_dx``, ``catch_dy`` from where the
   egg started and ``catch_dz`` from the start height, in ``fall_time`` s;
4. **wait** ``catch_wait`` s for the egg;
5. **give** way ``give`` m in ``give_time`` s as it lands, and hold.

The **place** family (serve) carries the egg off the pan and lays it down, in four phases:

1. **carry** the blade to ``carry_x`` (measured from the pan's centre, so that the search, not the
   family, finds where the plate is), ``carry_dy`` from the start and ``carry_z`` high, level, in
   ``carry_time`` s;
2. **lower** it to ``lower_z`` pitched ``lower_pitch`` (tip down when positive) in ``lower_time`` s
   and wait ``lower_wait`` s;
3. **draw** it back ``draw_dx`` m (negative: towards the handle) while rising ``draw_rise`` m, in
   ``draw_time`` s: a quick draw leaves the egg behind, a slow one drags it along;
4. hold.

The **shake** family (season) fetches the shaker and salts the egg, in five phases:

1. **dock**: bring the blade, level, ``dock_drop`` m under the shaker's base in its rack in
   ``dock_time`` s, then rise to the base (``dock_dx``, ``dock_dy``, ``dock_dz`` off it) in
   ``rise_time`` s and wait ``dock_wait`` s: the tool changer latches the shaker (the rack is a
   fixture of the kitchen, like the pan at the origin; the egg, which moves, is what is read
   from the observation);
2. **carry** it to ``carry_dx``, ``carry_dy`` from the egg and ``carry_z`` high in ``carry_time`` s;
3. **turn** it over, rolling the blade ``turn_roll`` rad in ``turn_time`` s;
4. **shake** it ``shakes`` times (rounded), ``shake_amplitude`` m each way along the horizontal
   direction ``shake_angle``, ``shake_period`` s a shake;
5. hold while the salt lands.

The base family can throw only at the edge of its ranges (a lift at its shortest and highest), and
keeps the blade where the toss ended: from zero demonstrations its search found no toss in 3,000
trials (docs/design.md).

Parameters live in the unit cube (``Family.dim`` values in [0, 1]) for samplers and CEM;
``Family.physical`` maps them to SI through each parameter's range, ``Family.motion`` builds the
spline. ``family(skill)`` is the family a skill is searched in; the module-level ``dim``,
``physical``, ``unit``, ``motion`` and ``sample`` are the base family's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robo_coevolve.motion.keyframes import KeyframeMotion
from robo_coevolve.task_spec import DOCK_POSE

GRAVITY = 9.81
IN_FLIGHT_SPEED = 0.05  # m/s: an egg moving faster than this at the start is treated as in flight
RECOVER_TIME = 0.15  # s


@dataclass(frozen=True)
class Parameter:
    name: str
    low: float
    high: float
    unit: str
    doc: str


PARAMETERS = (
    Parameter("approach_time", 0.05, 0.6, "s", "time to reach the pre-pose"),
    Parameter("approach_dx", -0.15, 0.05, "m", "pre-pose x from the anchor (negative: behind the egg)"),
    Parameter("approach_dy", -0.03, 0.03, "m", "pre-pose y from the anchor"),
    Parameter("approach_dz", -0.005, 0.05, "m", "blade height at the pre-pose above the anchor"),
    Parameter("approach_pitch", -0.3, 0.3, "rad", "blade pitch during approach and push"),
    Parameter("push_distance", 0.0, 0.2, "m", "forward slide after the approach"),
    Parameter("push_time", 0.05, 1.0, "s", "duration of the slide (or wait)"),
    Parameter("lift_height", -0.06, 0.12, "m", "rise after the push (negative gives way)"),
    Parameter("lift_time", 0.05, 0.6, "s", "duration of the lift"),
    Parameter("lift_pitch", -0.3, 0.3, "rad", "blade pitch at the end of the lift"),
    Parameter("toss_roll", -2.8, 2.8, "rad", "wrist roll at the end of the toss"),
    Parameter("toss_rise", 0.0, 0.08, "m", "rise during the toss"),
    Parameter("toss_time", 0.08, 0.4, "s", "duration of the toss"),
    Parameter("retreat_dx", -0.15, 0.05, "m", "x move while settling"),
    Parameter("meet_height", 0.04, 0.12, "m", "height where an egg in flight is met"),
)
THROW_PARAMETERS = (
    Parameter("wait_time", 0.05, 0.5, "s", "time at the start pose before the throw"),
    Parameter("throw_time", 0.03, 0.3, "s", "duration of the throw"),
    Parameter("throw_rise", 0.0, 0.15, "m", "rise during the throw"),
    Parameter("throw_dx", -0.03, 0.03, "m", "x move during the throw"),
    Parameter("throw_dy", -0.03, 0.03, "m", "y move during the throw"),
    Parameter("throw_pitch", -0.4, 0.4, "rad", "blade pitch at the end of the throw"),
    Parameter("toss_roll", -1.5, 1.5, "rad", "wrist roll at the end of the throw"),
    Parameter("fall_time", 0.05, 0.4, "s", "time from the throw to the level catch pose"),
    Parameter("catch_dx", -0.04, 0.04, "m", "catch pose x from the egg's start"),
    Parameter("catch_dy", -0.04, 0.04, "m", "catch pose y from the egg's start"),
    Parameter("catch_dz", -0.04, 0.12, "m", "catch pose height from the start height"),
    Parameter("catch_wait", 0.0, 0.3, "s", "time at the catch pose before giving way"),
    Parameter("give", 0.0, 0.06, "m", "how far the blade gives way under the landing egg"),
    Parameter("give_time", 0.05, 0.4, "s", "duration of the give"),
)


PLACE_PARAMETERS = (
    Parameter("carry_time", 0.3, 1.5, "s", "time to carry the egg to the carry pose"),
    Parameter("carry_x", 0.0, 0.3, "m", "carry pose x from the pan centre"),
    Parameter("carry_dy", -0.05, 0.05, "m", "carry pose y from the start"),
    Parameter("carry_z", 0.02, 0.12, "m", "carry pose height above the pan surface"),
    Parameter("lower_time", 0.1, 0.6, "s", "duration of the lowering"),
    Parameter("lower_z", -0.01, 0.04, "m", "blade height after the lowering"),
    Parameter("lower_pitch", -0.3, 0.6, "rad", "blade pitch after the lowering (positive: tip down)"),
    Parameter("lower_wait", 0.0, 0.3, "s", "time lowered before the draw"),
    Parameter("draw_dx", -0.25, 0.0, "m", "x move of the draw"),
    Parameter("draw_rise", 0.0, 0.05, "m", "rise during the draw"),
    Parameter("draw_time", 0.03, 0.4, "s", "duration of the draw"),
)


SHAKE_PARAMETERS = (
    Parameter("dock_time", 0.3, 1.0, "s", "time to reach the pre-dock pose under the shaker"),
    Parameter("dock_drop", 0.01, 0.05, "m", "pre-dock pose's depth under the shaker's base"),
    Parameter("rise_time", 0.05, 0.4, "s", "time to rise from the pre-dock pose to the base"),
    Parameter("dock_dx", -0.015, 0.015, "m", "dock pose x from the shaker's base"),
    Parameter("dock_dy", -0.015, 0.015, "m", "dock pose y from the shaker's base"),
    Parameter("dock_dz", -0.015, 0.015, "m", "dock pose height from the shaker's base"),
    Parameter("dock_wait", 0.02, 0.3, "s", "time docked before the carry"),
    Parameter("carry_time", 0.2, 1.0, "s", "time to carry the shaker over the egg"),
    Parameter("carry_dx", -0.04, 0.04, "m", "carry pose x from the egg"),
    Parameter("carry_dy", -0.04, 0.04, "m", "carry pose y from the egg"),
    Parameter("carry_z", 0.1, 0.3, "m", "blade height of the carry pose above the pan surface"),
    Parameter("turn_time", 0.15, 0.6, "s", "time to turn the shaker over"),
    Parameter("turn_roll", 2.4, 3.4, "rad", "blade roll that turns the shaker's hole down"),
    Parameter("shakes", 0.0, 4.0, "", "number of shakes (rounded)"),
    Parameter("shake_amplitude", 0.0, 0.03, "m", "how far each shake moves the shaker each way"),
    Parameter("shake_period", 0.08, 0.3, "s", "duration of one shake"),
    Parameter("shake_angle", 0.0, 3.1416, "rad", "horizontal direction of the shakes from +x"),
)


def _shake_motion(q: dict[str, float], start: np.ndarray, egg: np.ndarray) -> KeyframeMotion:
    dock = [DOCK_POSE[0] + q["dock_dx"], DOCK_POSE[1] + q["dock_dy"], DOCK_POSE[2] + q["dock_dz"], 0.0, 0.0]
    below = [dock[0], dock[1], dock[2] - q["dock_drop"], 0.0, 0.0]
    x, y, z = egg[0] + q["carry_dx"], egg[1] + q["carry_dy"], q["carry_z"]
    over, turned = [x, y, z, 0.0, 0.0], [x, y, z, 0.0, q["turn_roll"]]
    durations = [q["dock_time"], q["rise_time"], q["dock_wait"], q["carry_time"], q["turn_time"]]
    times = list(np.concatenate([[0.0], np.cumsum(durations)]))
    poses = [start, below, dock, dock, over, turned]
    ux, uy = np.cos(q["shake_angle"]) * q["shake_amplitude"], np.sin(q["shake_angle"]) * q["shake_amplitude"]
    period = q["shake_period"]
    for _ in range(int(round(q["shakes"]))):
        t = times[-1]
        times += [t + period / 4, t + 3 * period / 4, t + period]
        poses += [[x + ux, y + uy, z, 0.0, q["turn_roll"]], [x - ux, y - uy, z, 0.0, q["turn_roll"]], turned]
    return KeyframeMotion(times + [times[-1] + 0.3], poses + [turned])


def _start_and_egg(obs: dict) -> tuple[np.ndarray, np.ndarray]:
    if "egg" not in obs:
        raise ValueError("motion primitives are anchored at the egg: make the env with privileged=True")
    return np.asarray(obs["proprio"][:5], np.float64), np.asarray(obs["egg"], np.float64)


def anchor(egg_state: np.ndarray, meet_height: float) -> np.ndarray:
    """Where the base family aims: the egg's position, or for an egg in flight the point where its
    ballistic path descends through ``meet_height`` (its apex if it never gets that high)."""
    p, v = np.asarray(egg_state[:3], np.float64), np.asarray(egg_state[7:10], np.float64)
    if np.linalg.norm(v) < IN_FLIGHT_SPEED:
        return p
    disc = v[2] ** 2 + 2 * GRAVITY * (p[2] - meet_height)
    t = (v[2] + np.sqrt(max(disc, 0.0))) / GRAVITY
    return np.array([p[0] + v[0] * t, p[1] + v[1] * t, p[2] + v[2] * t - 0.5 * GRAVITY * t * t])


def _base_motion(q: dict[str, float], start: np.ndarray, egg: np.ndarray) -> KeyframeMotion:
    ax, ay, az = anchor(egg, q["meet_height"])
    pre = [ax + q["approach_dx"], ay + q["approach_dy"], az + q["approach_dz"], q["approach_pitch"], 0.0]
    pushed = [pre[0] + q["push_distance"], pre[1], pre[2], q["approach_pitch"], 0.0]
    lifted = [pushed[0], pre[1], pushed[2] + q["lift_height"], q["lift_pitch"], 0.0]
    tossed = [pushed[0], pre[1], lifted[2] + q["toss_rise"], q["lift_pitch"], q["toss_roll"]]
    level = [pushed[0], pre[1], tossed[2], 0.0, 0.0]
    settled = [pushed[0] + q["retreat_dx"], pre[1], tossed[2], 0.0, 0.0]
    durations = [q["approach_time"], q["push_time"], q["lift_time"], q["toss_time"], RECOVER_TIME, 0.4]
    times = np.concatenate([[0.0], np.cumsum(durations)])
    return KeyframeMotion(times, [start, pre, pushed, lifted, tossed, level, settled])


def _throw_motion(q: dict[str, float], start: np.ndarray, egg: np.ndarray) -> KeyframeMotion:
    x, y, z = start[:3]
    thrown = [x + q["throw_dx"], y + q["throw_dy"], z + q["throw_rise"], q["throw_pitch"], q["toss_roll"]]
    caught = [egg[0] + q["catch_dx"], egg[1] + q["catch_dy"], z + q["catch_dz"], 0.0, 0.0]
    given = [caught[0], caught[1], caught[2] - q["give"], 0.0, 0.0]
    durations = [q["wait_time"], q["throw_time"], q["fall_time"], q["catch_wait"] + 0.01, q["give_time"]]
    times = np.concatenate([[0.0], np.cumsum(durations)])
    return KeyframeMotion(times, [start, start, thrown, caught, caught, given])


def _place_motion(q: dict[str, float], start: np.ndarray, egg: np.ndarray) -> KeyframeMotion:
    y = start[1] + q["carry_dy"]
    carried = [q["carry_x"], y, q["carry_z"], 0.0, 0.0]
    lowered = [q["carry_x"], y, q["lower_z"], q["lower_pitch"], 0.0]
    drawn = [q["carry_x"] + q["draw_dx"], y, q["lower_z"] + q["draw_rise"], 0.0, 0.0]
    durations = [q["carry_time"], q["lower_time"], q["lower_wait"] + 0.01, q["draw_time"], 0.3]
    times = np.concatenate([[0.0], np.cumsum(durations)])
    return KeyframeMotion(times, [start, carried, lowered, lowered, drawn, drawn])


@dataclass(frozen=True)
class Family:
    """A primitive family: its named parameters (each a range) and how a parameter set and the
    episode's start pose and egg state make a motion."""

    name: str
    parameters: tuple[Parameter, ...]
    build: Callable[[dict[str, float], np.ndarray, np.ndarray], KeyframeMotion]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def dim(self) -> int:
        return len(self.parameters)

    def physical(self, u: np.ndarray) -> dict[str, float]:
        """Unit-cube parameters (dim,) -> named SI values."""
        u = np.asarray(u, dtype=np.float64)
        if u.shape != (self.dim(),):
            raise ValueError(f"{self.name} primitive parameters need shape ({self.dim()},), got {u.shape}")
        low = np.array([p.low for p in self.parameters])
        high = np.array([p.high for p in self.parameters])
        values = low + np.clip(u, 0.0, 1.0) * (high - low)
        return dict(zip(self.names, values.tolist(), strict=True))

    def unit(self, values: dict[str, float]) -> np.ndarray:
        """Named SI values -> unit-cube parameters (missing names take the middle of their range)."""
        unknown = sorted(set(values) - set(self.names))
        if unknown:
            raise ValueError(
                f"unknown primitive parameter(s) {unknown} of the {self.name} family: known are "
                f"{list(self.names)}"
            )
        u = np.full(self.dim(), 0.5)
        for i, p in enumerate(self.parameters):
            if p.name in values:
                u[i] = (values[p.name] - p.low) / (p.high - p.low)
        return u

    def motion(self, u: np.ndarray, obs: dict) -> KeyframeMotion:
        """The primitive of unit-cube parameters ``u`` for an episode whose first observation is
        ``obs`` (needs ``proprio`` and the privileged ``egg`` state)."""
        start, egg = _start_and_egg(obs)
        return self.build(self.physical(u), start, egg)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n, dim) parameters drawn uniformly from the unit cube: the broad prior."""
        return rng.uniform(0.0, 1.0, size=(n, self.dim()))


BASE = Family("base", PARAMETERS, _base_motion)
THROW = Family("throw", THROW_PARAMETERS, _throw_motion)
PLACE = Family("place", PLACE_PARAMETERS, _place_motion)
SHAKE = Family("shake", SHAKE_PARAMETERS, _shake_motion)
FAMILIES = {f.name: f for f in (BASE, THROW, PLACE, SHAKE)}
_SKILL_FAMILY = {"toss": THROW, "serve": PLACE, "season": SHAKE}  # every other skill: BASE


def family(skill: str) -> Family:
    """The family ``skill`` is searched in."""
    return _SKILL_FAMILY.get(skill, BASE)


NAMES = BASE.names


def dim() -> int:
    return BASE.dim()


def physical(u: np.ndarray) -> dict[str, float]:
    """Unit-cube parameters (dim,) -> named SI values, in the base family."""
    return BASE.physical(u)


def unit(values: dict[str, float]) -> np.ndarray:
    """Named SI values -> unit-cube parameters, in the base family."""
    return BASE.unit(values)


def motion(u: np.ndarray, obs: dict) -> KeyframeMotion:
    """The base family's primitive of ``u`` for the episode that starts with ``obs``."""
    return BASE.motion(u, obs)


def sample(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, dim) base-family parameters drawn uniformly from the unit cube: the broad prior."""
    return BASE.sample(rng, n)
