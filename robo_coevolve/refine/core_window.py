"""Core segments: the window of a successful trial that made it work, re-simulated on its own.

``core_window`` finds, from the scorer's events alone:

- the **success onset**: the first step of the final, unbroken run of steps after which the trial
  would count as a success (``scoring.success.success_over_time``);
- the **attempt start**: the first step of the last stretch, before the success, during which the
  egg sat in the skill's starting situation (scoop: resting on the pan, untouched by the blade;
  flip and toss: resting upright on the blade; serve: on the blade, still nearer the pan than
  the plate (the carry moves it); catch: in the air; season: the shaker still in its rack, which
  it leaves once for good). That stretch holds the
  approach of the attempt that worked; everything before it is an earlier attempt that failed (a
  dropped scoop, a flip that fell back) and is pruned. A trial with no earlier attempt keeps its
  start: a policy cloned from the segment must be able to begin where an episode begins;

and returns ``[attempt start, success onset + margin)`` (or to the trial's end), which
always covers the hold window that the success predicate checks. Blips out of the starting
situation shorter than ``BLIP_STEPS`` (a tremor of a resting egg) do not split the stretch.

``simulate_window`` runs the window's actions (the source's, or smoothed ones) from the source's
state at the window's start, recording the full state at every step, so a Segment holds exactly
what the simulator did with its actions.
"""

from __future__ import annotations

import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.scoring import Scorer
from robo_coevolve.scoring.progress import PLATE_DISTANCE
from robo_coevolve.scoring.success import success_over_time
from robo_coevolve.segment import Segment
from robo_coevolve.task_spec import BLADE_START_SKILLS
from robo_coevolve.trajectory import Trajectory


def attempt_start_condition(skill: str, ev: dict[str, np.ndarray]) -> np.ndarray:
    """(T,) bool: the egg is back where an attempt of ``skill`` starts from."""
    if skill == "scoop":
        return ev["on_pan"] & ~ev["on_blade"] & ev["resting"]
    if skill == "serve":
        return ev["blade_only"] & (ev["to_plate"] > PLATE_DISTANCE / 2)
    if skill in BLADE_START_SKILLS:
        return ev["blade_only"] & (ev["up_z"] > 0.7) & ev["resting"]
    if skill == "catch":
        return ev["in_air"]
    if skill == "season":
        return ~np.logical_or.accumulate(ev["shaker_held"])
    raise ValueError(f"no attempt condition for skill {skill!r}")


BLIP_STEPS = 5


def _last_stretch_start(condition: np.ndarray) -> int:
    """First index of the last run of True in ``condition``, after closing gaps shorter than
    ``BLIP_STEPS`` between runs (0 when it holds throughout)."""
    c = np.asarray(condition, bool).copy()
    edges = np.flatnonzero(np.diff(np.concatenate([[1], c.astype(int), [1]])))
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        if stop - start < BLIP_STEPS and start > 0 and stop < len(c):
            c[start:stop] = True
    true = np.flatnonzero(c)
    if not len(true):
        return len(c)
    last = true[-1]
    before = np.flatnonzero(~c[: last + 1])
    return int(before[-1]) + 1 if len(before) else 0


def success_onset(traj: Trajectory, scorer: Scorer, events: dict | None = None) -> int | None:
    """First control step of the final, unbroken run of steps after which ``traj`` would count as
    a success, or None when it did not succeed. ``events``: ``scorer.events(traj.record())`` if the
    caller already has them."""
    ev = scorer.events(traj.record()) if events is None else events
    holds = success_over_time(traj.task.skill, ev, scorer.hold_steps, scorer.thresholds)
    if not len(holds) or not holds[-1]:
        return None
    broken = np.flatnonzero(~holds)
    return int(broken[-1]) + 1 if len(broken) else 0


def core_window(
    traj: Trajectory, scorer: Scorer, margin_after: int | None = None, events: dict | None = None
) -> tuple[int, int] | None:
    """``(start, stop)`` control steps of the core segment of a successful ``traj``, or None when
    the trial did not succeed; ``margin_after`` steps are kept after the success onset (None: the
    rest of the trial). ``events`` as for ``success_onset``."""
    ev = scorer.events(traj.record()) if events is None else events
    onset = success_onset(traj, scorer, ev)
    if onset is None:
        return None
    first_held = max(0, onset - scorer.hold_steps + 1)  # the hold window must lie inside
    ready = attempt_start_condition(traj.task.skill, ev)[:first_held]
    start = min(_last_stretch_start(ready), first_held) if ready.any() else 0
    stop = len(traj) if margin_after is None else min(len(traj), onset + 1 + margin_after)
    return start, stop


def states_along(traj: Trajectory, env: EggFlipEnv) -> np.ndarray:
    """(T + 1, state_size): the full state before every action of ``traj`` and after the last."""
    env.reset_to_state(traj.initial_state, traj.disturbance, task=traj.task)
    states = [env.physics.get_state()]
    for action in traj.actions:
        env.step(action)
        states.append(env.physics.get_state())
    return np.asarray(states)


def simulate_window(
    env: EggFlipEnv, traj: Trajectory, start_state: np.ndarray, actions: np.ndarray, meta: dict
) -> Segment:
    """Run ``actions`` from ``start_state`` (a state of ``traj``) and record the Segment."""
    obs, _ = env.reset_to_state(start_state, traj.disturbance, task=traj.task)
    states, proprio, egg = [env.physics.get_state()], [obs["proprio"]], [obs["egg"]]
    done = []
    for action in np.asarray(actions, np.float32):
        obs, _, terminated, _, _ = env.step(action)
        states.append(env.physics.get_state())
        proprio.append(obs["proprio"])
        egg.append(obs["egg"])
        done.append(action)
        if terminated:
            break
    return Segment(
        task=traj.task,
        control_hz=traj.control_hz,
        states=np.asarray(states),
        disturbance=traj.disturbance,
        actions=np.asarray(done, np.float32).reshape(-1, 5),
        proprio=np.asarray(proprio, np.float32),
        egg=np.asarray(egg, np.float32),
        sensors=env.sensor_rows(),
        outcome=env.outcome().to_dict(),
        meta=dict(meta),
    )
