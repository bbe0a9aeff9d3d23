"""Physical validity of a task variant, judged in the simulator before any trial counts on it.

A TaskSpec that validates may still describe a start the scene cannot hold: an egg that slides
off a steep blade, one that sinks into the pan, a model that blows up. ``check_physics`` resets
the env with the task (the reset settles resting eggs), checks that nothing penetrates by more
than ``max_penetration`` and that the state is finite, then holds the spatula still for
``hold_time`` s and checks that the egg stays where the skill starts it: resting on the pan for
scoop, on the blade and off the pan for flip and toss, off the floor for catch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.scoring.events import step_events
from robo_coevolve.task_spec import BLADE_START_SKILLS, TaskSpec

MAX_PENETRATION = 0.002  # m


@dataclass(frozen=True)
class PhysicsVerdict:
    """``valid`` and, when not, ``reason`` (one phrase); ``penetration`` m, deepest egg contact."""

    valid: bool
    reason: str
    penetration: float

    def to_dict(self) -> dict:
        return dict(vars(self))


def check_physics(
    task: TaskSpec,
    control_hz: float = 50.0,
    hold_time: float = 0.3,
    max_penetration: float = MAX_PENETRATION,
    seeds: tuple[int, ...] = (0, 1),
) -> PhysicsVerdict:
    """Judge ``task`` from starts drawn with each of ``seeds``; see the module docstring."""
    env = EggFlipEnv(task=task, control_hz=control_hz, privileged=True)
    try:
        worst = 0.0
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            p = env.physics
            m, d = p.model, p.data
            if p.diverged():
                return PhysicsVerdict(False, "start state is not finite", float("nan"))
            egg_geoms = set(np.flatnonzero(m.geom_bodyid == p.egg_body).tolist())
            depths = [
                -float(c.dist) for c in d.contact[: d.ncon] if c.geom1 in egg_geoms or c.geom2 in egg_geoms
            ]
            depth = max([0.0, *depths])
            worst = max(worst, depth)
            if depth > max_penetration:
                return PhysicsVerdict(False, f"egg penetrates {depth * 1e3:.1f} mm at the start", depth)
            hold = env.pose_to_action(np.asarray(obs["proprio"][:5], np.float64))
            for _ in range(max(1, int(round(hold_time / env.control_dt)))):
                env.step(hold)
                if p.diverged():
                    return PhysicsVerdict(False, "simulation diverged while holding still", worst)
            ev = step_events(env.record(), env.scorer.thresholds)
            last = {k: bool(v[-1]) for k, v in ev.items() if v.dtype == bool}
            if last["on_floor"]:
                return PhysicsVerdict(False, "egg fell off while the spatula held still", worst)
            if task.skill == "scoop" and not (last["on_pan"] and last["resting"]):
                return PhysicsVerdict(False, "egg does not rest on the pan", worst)
            if task.skill in BLADE_START_SKILLS and not (last["on_blade"] and not last["on_pan"]):
                return PhysicsVerdict(False, "egg does not stay on the blade", worst)
        return PhysicsVerdict(True, "valid", worst)
    finally:
        env.close()
