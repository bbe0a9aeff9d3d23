"""Success predicates of every skill, in one place.

Each predicate looks at a trial's per-step events (``events.step_events``) and returns
``(success, reason)``; the reason names the first unmet condition, or "success". Conditions "at
the end" must hold over every step of the last ``hold_time`` seconds, so an egg that is still
bouncing or sliding off as time runs out does not count.

Common to all skills, checked first and in this order: the simulation did not diverge, the egg
never touched the floor, and its integrity stayed at or above ``min_integrity``.

- **scoop**: at the end the egg is supported by the blade alone, lifted at least ``lift_height``
  above the pan surface, and resting on the blade.
- **flip**: at the end the egg is upside down and resting (on the pan or on the blade, not the
  plate).
- **catch**: the egg never touched the pan; at the end it is supported by the blade alone, above
  ``lift_height``, and resting on it.
- **toss**: the egg never touched the pan and was in the air (touching nothing) at some step: it
  was thrown, not pushed over; at the end it is upside down, supported by the blade alone, above
  ``lift_height``, and resting on it.
- **serve**: at the end the egg is supported by the plate alone, resting on it, with the side up
  that it started with (a serve's instruction names that side, ``TaskSpec.egg_side_up``).
- **season**: at the end the egg still lies on the plate alone, at rest, the side up it started,
  and the salt (``scoring.salt``) is a pinch: between ``salt_min`` and ``salt_max`` grains out of
  the shaker, all of them landed, at least ``salt_on_egg`` of them on the egg's upper face over at
  least ``salt_cells`` of its 1 cm cells, at most ``salt_spill`` off the plate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from robo_coevolve.scoring.salt import seasoned
from robo_coevolve.scoring.thresholds import Thresholds

Events = dict[str, np.ndarray]


def _common(ev: Events, thresholds: Thresholds) -> str | None:
    if not ev["finite"].all():
        return "simulation diverged"
    if ev["on_floor"].any():
        return "egg fell to the floor"
    if ev["integrity"][-1] < thresholds.min_integrity:
        return f"egg cracked (integrity {ev['integrity'][-1]:.2f} < {thresholds.min_integrity})"
    return None


def scoop(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    if not ev["blade_only"][end].all():
        return False, "egg not held by the blade alone at the end"
    if not ev["lifted"][end].all():
        return False, f"egg not lifted {thresholds.lift_height} m above the pan"
    if not ev["resting"][end].all():
        return False, "egg still moving on the blade at the end"
    return True, "success"


def flip(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    if not ev["upside_down"][end].all():
        return False, "egg not upside down at the end"
    if ev["on_plate"][end].any():
        return False, "egg turned over onto the plate, not in the pan"
    if not ev["resting"][end].all():
        return False, "egg still moving at the end"
    return True, "success"


def _held_on_blade(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    """The end of a catch: the blade alone holds the egg, lifted, at rest."""
    if not ev["blade_only"][end].all():
        return False, "egg not held by the blade alone at the end"
    if not ev["lifted"][end].all():
        return False, f"egg not held {thresholds.lift_height} m above the pan"
    if not ev["resting"][end].all():
        return False, "egg still moving on the blade at the end"
    return True, "success"


def catch(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    if ev["on_pan"].any():
        return False, "egg touched the pan before it was caught"
    return _held_on_blade(ev, end, thresholds)


def toss(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    if ev["on_pan"].any():
        return False, "egg touched the pan"
    if not ev["in_air"].any():
        return False, "egg never left the blade"
    if not ev["upside_down"][end].all():
        return False, "egg not upside down at the end"
    return _held_on_blade(ev, end, thresholds)


def side_kept(ev: Events, thresholds: Thresholds) -> np.ndarray:
    """Per step, whether the egg lies clearly the side up it started with."""
    up_z = ev["up_z"]
    started_upright = len(up_z) == 0 or up_z[0] >= 0
    return up_z > -thresholds.upside_down_z if started_upright else up_z < thresholds.upside_down_z


def serve(
    ev: Events, end: slice, thresholds: Thresholds, turned: str = "egg not the side up it was served as"
) -> tuple[bool, str]:
    """The egg lies on the plate alone at the end, at rest, the side up it started (else ``turned``)."""
    if not ev["plate_only"][end].all():
        return False, "egg not lying on the plate alone at the end"
    if not side_kept(ev, thresholds)[end].all():
        return False, turned
    if not ev["resting"][end].all():
        return False, "egg still moving on the plate at the end"
    return True, "success"


def season(ev: Events, end: slice, thresholds: Thresholds) -> tuple[bool, str]:
    served = serve(ev, end, thresholds, turned="egg turned over while seasoning")
    if not served[0]:
        return served
    n = int(ev["salt_dispensed"][-1])
    if n < thresholds.salt_min:
        return False, f"too little salt: {n} grains < {thresholds.salt_min}"
    if n > thresholds.salt_max:
        return False, f"too much salt: {n} grains > {thresholds.salt_max}"
    if ev["salt_moving"][end].any():
        return False, "salt still falling or rolling at the end"
    on_egg, spilled, cells = (int(ev[k][-1]) for k in ("salt_on_egg", "salt_spilled", "salt_cells"))
    if on_egg < thresholds.salt_on_egg * n:
        return False, f"only {on_egg} of {n} grains on the egg (< {thresholds.salt_on_egg:.0%})"
    if cells < thresholds.salt_cells:
        return False, f"salt on {cells} of the egg's cells (< {thresholds.salt_cells}): heaped, not spread"
    if spilled > thresholds.salt_spill * n:
        return False, f"{spilled} of {n} grains spilled off the plate (> {thresholds.salt_spill:.0%})"
    if not seasoned(ev, thresholds)[end].all():
        return False, "salt changed over the end window"
    return True, "success"


PREDICATES: dict[str, Callable[[Events, slice, Thresholds], tuple[bool, str]]] = {
    "scoop": scoop,
    "flip": flip,
    "catch": catch,
    "toss": toss,
    "serve": serve,
    "season": season,
}


def _condition(skill: str, ev: Events, thresholds: Thresholds) -> np.ndarray:
    """Per step, whether the skill's end condition holds at that instant."""
    settled = ev["blade_only"] & ev["lifted"] & ev["resting"]
    if skill == "scoop":
        return settled
    if skill == "flip":
        return ev["upside_down"] & ev["resting"] & ~ev["on_plate"]
    if skill == "catch":
        return settled & ~np.maximum.accumulate(ev["on_pan"])
    if skill == "toss":
        thrown = np.maximum.accumulate(ev["in_air"]) & ~np.maximum.accumulate(ev["on_pan"])
        return settled & ev["upside_down"] & thrown
    if skill == "serve":
        return ev["plate_only"] & side_kept(ev, thresholds) & ev["resting"]
    if skill == "season":
        return ev["plate_only"] & side_kept(ev, thresholds) & ev["resting"] & seasoned(ev, thresholds)
    raise ValueError(f"no success predicate for skill {skill!r}: known are {sorted(PREDICATES)}")


def success_over_time(skill: str, ev: Events, hold_steps: int, thresholds: Thresholds) -> np.ndarray:
    """(T,) bool: whether the trial would be a success if it ended after step t, for every t at
    once (``judge`` on every prefix, vectorised)."""
    if skill not in PREDICATES:
        raise ValueError(f"no success predicate for skill {skill!r}: known are {sorted(PREDICATES)}")
    failed = np.cumsum(~_condition(skill, ev, thresholds))
    t = np.arange(len(failed))
    start = np.maximum(0, t - hold_steps + 1)
    before = np.where(start > 0, failed[np.maximum(start - 1, 0)], 0)
    held = (failed - before) == 0
    common = (
        np.logical_and.accumulate(ev["finite"])
        & ~np.logical_or.accumulate(ev["on_floor"])
        & (ev["integrity"] >= thresholds.min_integrity)
    )
    return held & common


def judge(skill: str, ev: Events, hold_steps: int, thresholds: Thresholds) -> tuple[bool, str]:
    """``(success, reason)`` of a trial of ``skill`` from its per-step events."""
    if skill not in PREDICATES:
        raise ValueError(f"no success predicate for skill {skill!r}: known are {sorted(PREDICATES)}")
    failure = _common(ev, thresholds)
    if failure:
        return False, failure
    end = slice(max(0, len(ev["finite"]) - hold_steps), None)
    return PREDICATES[skill](ev, end, thresholds)
