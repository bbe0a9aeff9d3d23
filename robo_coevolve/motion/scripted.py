"""Hand-written spatula motions that solve the default tasks, for demos, tests and baselines.

They read the privileged egg state of the first observation (where the egg lies) and return a
``KeyframeMotion``; nothing else about the simulator is used. The learning loop never sees them:
it finds its own motions from nothing. They exist to show that the world and its scorer admit a
solution, and to test the scorer with real physics.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.motion.keyframes import KeyframeMotion
from robo_coevolve.task_spec import DOCK_POSE

GRAVITY = 9.81


def _split(obs: dict) -> tuple[np.ndarray, np.ndarray]:
    if "egg" not in obs:
        raise ValueError("scripted motions need the privileged egg state: make the env with privileged=True")
    return np.asarray(obs["proprio"][:5], np.float64), np.asarray(obs["egg"], np.float64)


def scoop(
    obs: dict, press: float = 0.002, push_end: float = 0.9, lift: float = 0.06, miss_by: float = 0.0
) -> KeyframeMotion:
    """Slide the blade flat along the pan under the egg, then lift it ``lift`` m, tip up.

    ``press`` m commands the blade that far into the pan so that it stays on the surface during
    the push; ``miss_by`` m shifts the push sideways (a miss, for tests).
    """
    start, egg = _split(obs)
    ex, ey = egg[0], egg[1] + miss_by
    return KeyframeMotion(
        [0.0, 0.15, push_end, push_end + 0.15, push_end + 0.6, push_end + 0.7],
        [
            start,
            [start[0], ey, -press, start[3], 0.0],
            [ex + 0.005, ey, -press, start[3], 0.0],
            [ex + 0.01, ey, 0.005, 0.0, 0.0],
            [ex, ey, lift, -0.08, 0.0],
            [ex, ey, lift, -0.08, 0.0],
        ],
    )


def flip(
    obs: dict,
    direction: int = 1,
    rise: float = 0.05,
    duration: float = 0.2,
    roll: float = 2.1,
    retreat: float = 0.12,
) -> KeyframeMotion:
    """Raise the blade ``rise`` m while rolling it ``roll`` rad (``direction`` +1 or -1) in
    ``duration`` s so the egg tumbles off upside down onto the pan, then withdraw the blade."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    start, _ = _split(obs)
    x, y, z = start[:3]
    t0 = 0.2
    return KeyframeMotion(
        [0.0, t0, t0 + duration, t0 + duration + 0.15, t0 + duration + 0.5, t0 + duration + 0.6],
        [
            start,
            start,
            [x, y, z + rise, 0.0, direction * roll],
            [x, y, z + rise + 0.02, 0.0, 0.0],
            [x - retreat, y, z + rise, 0.0, 0.0],
            [x - retreat, y, z + rise, 0.0, 0.0],
        ],
    )


def catch(
    obs: dict, meet_height: float = 0.08, give: float = 0.04, give_time: float = 0.25
) -> KeyframeMotion:
    """Predict where the ballistic egg crosses ``meet_height`` m, put the blade there first,
    and move down ``give`` m with the egg over ``give_time`` s to absorb the impact."""
    start, egg = _split(obs)
    p, v = egg[:3], egg[7:10]
    # Time at which z(t) = meet_height on the way down.
    disc = v[2] ** 2 + 2 * GRAVITY * (p[2] - meet_height)
    t_hit = (v[2] + np.sqrt(max(disc, 0.0))) / GRAVITY
    xy = p[:2] + v[:2] * t_hit
    arrive = max(0.05, min(0.15, t_hit - 0.1))
    blade_z = meet_height - 0.004
    return KeyframeMotion(
        [0.0, arrive, t_hit, t_hit + give_time, t_hit + give_time + 0.3],
        [
            start,
            [xy[0], xy[1], blade_z, 0.0, 0.0],
            [xy[0], xy[1], blade_z, 0.0, 0.0],
            [xy[0], xy[1], blade_z - give, 0.0, 0.0],
            [xy[0], xy[1], blade_z - give, 0.0, 0.0],
        ],
    )


def toss(
    obs: dict,
    direction: int = 1,
    rise: float = 0.09,
    throw_time: float = 0.07,
    roll: float = 0.55,
    pitch: float = -0.15,
    fall_time: float = 0.125,
    wait: float = 0.09,
    give: float = 0.025,
    give_time: float = 0.19,
) -> KeyframeMotion:
    """Jerk the blade up ``rise`` m in ``throw_time`` s while rolling it ``roll`` rad (``direction``
    +1 or -1) and pitching it ``pitch`` rad, so the egg leaves it spinning; bring the blade level
    back to its start pose in ``fall_time`` s, under the turning egg, and give way ``give`` m in
    ``give_time`` s as it lands upside down. The numbers come from a CEM over this keyframe shape
    on shared start states, rounded; the loop never sees them."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    start, _ = _split(obs)
    x, y, z = start[:3]
    t0 = 0.1
    caught = t0 + throw_time + fall_time
    return KeyframeMotion(
        [0.0, t0, t0 + throw_time, caught, caught + wait, caught + wait + give_time],
        [
            start,
            start,
            [x, y, z + rise, pitch, direction * roll],
            [x, y, z, 0.0, 0.0],
            [x, y, z, 0.0, 0.0],
            [x, y, z - give, 0.0, 0.0],
        ],
    )


def serve(
    obs: dict,
    plate_x: float = 0.3,
    carry_time: float = 1.0,
    lower: float = 0.012,
    pitch: float = 0.3,
    draw: float = 0.14,
    draw_time: float = 0.06,
) -> KeyframeMotion:
    """Carry the blade level to ``plate_x`` m (over the plate) in ``carry_time`` s, lower it to
    ``lower`` m tipped ``pitch`` rad down, then draw it back ``draw`` m in ``draw_time`` s, so fast
    that the egg stays behind on the plate and keeps its side up."""
    start, _ = _split(obs)
    y = start[1]
    t = [0.0, carry_time, carry_time + 0.3, carry_time + 0.4, carry_time + 0.4 + draw_time]
    return KeyframeMotion(
        t + [t[-1] + 0.5],
        [
            start,
            [plate_x, y, 0.05, 0.0, 0.0],
            [plate_x, y, lower, pitch, 0.0],
            [plate_x, y, lower, pitch, 0.0],
            [plate_x - draw, y, lower + 0.01, 0.0, 0.0],
            [plate_x - draw, y, 0.06, 0.0, 0.0],
        ],
    )


def season(
    obs: dict,
    shakes: int = 2,
    amplitude: float = 0.01,
    period: float = 0.2,
    height: float = 0.2,
    aim: tuple[float, float] = (0.0, 0.0),
    roll: float = 3.1,
) -> KeyframeMotion:
    """Dock the blade under the shaker in its rack (the tool changer latches it), carry it
    ``height`` m high over the egg (``aim`` m off its centre), roll it ``roll`` rad so the hole
    points down, shake it ``shakes`` times ``amplitude`` m along x, ``period`` s each, and hold
    still while the salt lands."""
    start, egg = _split(obs)
    x, y = egg[0] + aim[0], egg[1] + aim[1]
    dock = list(DOCK_POSE)
    below = [dock[0], dock[1], dock[2] - 0.03, 0.0, 0.0]
    over = [x, y, height, 0.0, 0.0]
    turned = [x, y, height, 0.0, roll]
    times, poses = [0.0, 0.5, 0.8, 1.0, 1.5, 2.0, 2.2], [start, below, dock, dock, over, turned, turned]
    for _ in range(shakes):
        t = times[-1]
        times += [t + period / 4, t + 3 * period / 4, t + period]
        poses += [[x + amplitude, y, height, 0.0, roll], [x - amplitude, y, height, 0.0, roll], turned]
    return KeyframeMotion(times + [times[-1] + 0.6], poses + [turned])  # the salt lands


MOTIONS = {"scoop": scoop, "flip": flip, "catch": catch, "toss": toss, "serve": serve, "season": season}
