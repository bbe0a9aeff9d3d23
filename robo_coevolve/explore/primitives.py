"""Motion primitives: one parametric family of spatula motions for every skill.

A primitive is a keyframe spline (``motion.keyframes.KeyframeMotion``) through six phases, each
shaped by named parameters:

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

Parameters live in the unit cube (``dim`` values in [0, 1]) for samplers and CEM; ``physical``
maps them to SI through each parameter's range, ``motion`` builds the spline.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robo_coevolve.motion.keyframes import KeyframeMotion

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
NAMES = tuple(p.name for p in PARAMETERS)
_LOW = np.array([p.low for p in PARAMETERS])
_HIGH = np.array([p.high for p in PARAMETERS])


def dim() -> int:
    return len(PARAMETERS)


def physical(u: np.ndarray) -> dict[str, float]:
    """Unit-cube parameters (dim,) -> named SI values."""
    u = np.asarray(u, dtype=np.float64)
    if u.shape != (len(PARAMETERS),):
        raise ValueError(f"primitive parameters need shape ({len(PARAMETERS)},), got {u.shape}")
    values = _LOW + np.clip(u, 0.0, 1.0) * (_HIGH - _LOW)
    return dict(zip(NAMES, values.tolist(), strict=True))


def unit(values: dict[str, float]) -> np.ndarray:
    """Named SI values -> unit-cube parameters (missing names take the middle of their range)."""
    unknown = sorted(set(values) - set(NAMES))
    if unknown:
        raise ValueError(f"unknown primitive parameter(s) {unknown}: known are {list(NAMES)}")
    u = np.full(len(PARAMETERS), 0.5)
    for i, name in enumerate(NAMES):
        if name in values:
            u[i] = (values[name] - _LOW[i]) / (_HIGH[i] - _LOW[i])
    return u


def anchor(egg_state: np.ndarray, meet_height: float) -> np.ndarray:
    """Where the primitive aims: the egg's position, or for an egg in flight the point where its
    ballistic path descends through ``meet_height`` (its apex if it never gets that high)."""
    p, v = np.asarray(egg_state[:3], np.float64), np.asarray(egg_state[7:10], np.float64)
    if np.linalg.norm(v) < IN_FLIGHT_SPEED:
        return p
    disc = v[2] ** 2 + 2 * GRAVITY * (p[2] - meet_height)
    t = (v[2] + np.sqrt(max(disc, 0.0))) / GRAVITY
    return np.array([p[0] + v[0] * t, p[1] + v[1] * t, p[2] + v[2] * t - 0.5 * GRAVITY * t * t])


def motion(u: np.ndarray, obs: dict) -> KeyframeMotion:
    """The primitive of unit-cube parameters ``u`` for an episode whose first observation is ``obs``
    (needs ``proprio`` and the privileged ``egg`` state)."""
    if "egg" not in obs:
        raise ValueError("motion primitives are anchored at the egg: make the env with privileged=True")
    q = physical(u)
    start = np.asarray(obs["proprio"][:5], np.float64)
    ax, ay, az = anchor(obs["egg"], q["meet_height"])
    pre = [ax + q["approach_dx"], ay + q["approach_dy"], az + q["approach_dz"], q["approach_pitch"], 0.0]
    pushed = [pre[0] + q["push_distance"], pre[1], pre[2], q["approach_pitch"], 0.0]
    lifted = [pushed[0], pre[1], pushed[2] + q["lift_height"], q["lift_pitch"], 0.0]
    tossed = [pushed[0], pre[1], lifted[2] + q["toss_rise"], q["lift_pitch"], q["toss_roll"]]
    level = [pushed[0], pre[1], tossed[2], 0.0, 0.0]
    settled = [pushed[0] + q["retreat_dx"], pre[1], tossed[2], 0.0, 0.0]
    durations = [q["approach_time"], q["push_time"], q["lift_time"], q["toss_time"], RECOVER_TIME, 0.4]
    times = np.concatenate([[0.0], np.cumsum(durations)])
    return KeyframeMotion(times, [start, pre, pushed, lifted, tossed, level, settled])


def sample(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, dim) parameters drawn uniformly from the unit cube: the broad prior."""
    return rng.uniform(0.0, 1.0, size=(n, len(PARAMETERS)))
