"""Open-loop trials simulated with ``mujoco.rollout``, recorded exactly as the env would.

For each trial the env draws the start state (``reset`` with the task's seed), the plan turns the
first observation into the episode's actions, and ``mujoco.rollout`` integrates every physics step
in C with the GIL released (so threads run trials in parallel). The result is the same
``Trajectory``, bit for bit, that stepping ``EggFlipEnv`` with those actions gives: same start
state and solver warm start, the same controls and disturbance forces at every physics step, the
env's substep reduction, its early end when the egg falls off the pan, and its scorer.

The task's perturbations that act on the physics run here as in the env: ``servo_gain`` (in the
model), ``action_latency`` (the executed commands shifted), pushes. A push that waits for a phase
of the egg (``TaskSpec.disturbance_phase``) depends on the motion, so such a trial is simulated
twice: once without the push, to find the control step where the env would fire it (the motion
is the same up to there), then with the push from that step on. Observation perturbations do not
apply: a plan cannot see, it reads the true first observation.

A trial in the scene with the salt shaker (``TaskSpec.with_salt``: a season's) is stepped through
the env instead: its tool changer latches the shaker between control steps, which a rollout in C
cannot do, and its grains cost far more than the Python between steps. An early-stop judge does
not cut such a trial.

A trial whose simulation diverges (a MuJoCo instability warning or a non-finite state) is
re-simulated through the env itself, whose per-step checks define where it ended and why; it is
recorded as failed with reason "simulation diverged" and the batch goes on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import mujoco
import numpy as np
from mujoco import rollout

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.env.initial_state import PUSH_PHASES, Disturbance
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.plans import ActionPlan, NoisePlan, Plan
from robo_coevolve.scoring import PHASES, Thresholds
from robo_coevolve.scoring.events import fell, phase_index
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory, run_actions

if TYPE_CHECKING:
    from robo_coevolve.explore.value_model import EarlyStop

_FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS
_CONTROL = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_XFRC_APPLIED
_INSTABILITY = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)


@dataclass(frozen=True, eq=False)
class Trial:
    """One open-loop trial: a concrete task (its ``seed`` is the reset seed) and a plan.

    ``early_stop`` (an ``explore.value_model.EarlyStop``) judges the trial at its checkpoints while
    it runs and ends it at the first one it fails: the trial is then recorded up to that control
    step, failed, with reason "cut early" and ``meta["cut_at"]``. A trial that is not cut is the
    same, bit for bit, as one run without a judge.
    """

    task: TaskSpec
    plan: Plan
    meta: dict[str, Any] = field(default_factory=dict)
    early_stop: EarlyStop | None = None


class OpenLoopSimulator:
    """Runs trials one after another in the calling thread (make one per worker thread).

    Args:
        control_hz: the env's control rate.
        thresholds: scoring thresholds (default: the scorer's).
    """

    def __init__(self, control_hz: float = 50.0, thresholds: Thresholds | dict | None = None):
        self.control_hz = control_hz
        self.thresholds = thresholds
        self._envs: dict[tuple[float, float, bool], EggFlipEnv] = {}

    def env_for(self, task: TaskSpec) -> EggFlipEnv:
        """A privileged, image-free env with ``task``'s geometry (cached per geometry)."""
        key = (task.pan_height, task.egg_size, task.with_salt)
        if key not in self._envs:
            self._envs[key] = EggFlipEnv(
                task=task, control_hz=self.control_hz, privileged=True, thresholds=self.thresholds
            )
        return self._envs[key]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()

    def run(self, trial: Trial) -> Trajectory:
        env = self.env_for(trial.task)
        task = trial.task  # what the plan is shown: the true state, whatever the observation noise
        seen = task.replace(egg_obs_noise=0.0, egg_obs_dropout=0.0) if task.observation_perturbed else task
        obs, _ = env.reset(seed=trial.task.seed, options={"task": seen})
        actions = np.asarray(trial.plan.actions(obs, env), dtype=np.float32)
        if actions.shape != (env.horizon_steps, 5):
            raise ValueError(f"plan gave actions of shape {actions.shape}, expected ({env.horizon_steps}, 5)")
        actions = np.clip(actions, -1.0, 1.0)
        meta = {**trial.plan.describe(), **trial.meta}
        if not np.isfinite(actions).all():
            raise ValueError(f"plan {meta.get('plan')} gave non-finite actions")
        if env.physics.tool_changer is not None:
            return run_actions(env, actions, seed=trial.task.seed, meta=meta)
        traj = self._simulate(env, obs, actions, trial.task, meta, trial.early_stop)
        if traj is None:  # unstable: the env's own per-step checks record where and why it ended
            traj = run_actions(env, actions, seed=trial.task.seed, meta=meta)
        return traj

    def _simulate(
        self, env: EggFlipEnv, obs, actions, task, meta, early_stop: EarlyStop | None = None
    ) -> Trajectory | None:
        p = env.physics
        m, d = p.model, p.data
        substeps = env.substeps
        initial_state = env.initial_state.copy()
        state = np.empty(mujoco.mj_stateSize(m, _FULL))
        mujoco.mj_getState(m, d, state, _FULL)
        warmstart = d.qacc_warmstart.copy()

        steps = len(actions) * substeps
        commands = env.action_to_pose(actions)  # as sent; the servos run them ``latency`` steps later
        latency = task.action_latency
        executed = commands
        if latency:
            executed = np.concatenate([np.repeat(d.ctrl[None], latency, axis=0), commands[:-latency]])
        control = np.zeros((steps, m.nu + 6 * m.nbody))
        control[:, : m.nu] = np.repeat(executed, substeps, axis=0)
        column = m.nu + 6 * p.egg_body
        dist = env.disturbance
        if dist is not None and dist.phase != "any":
            times, dist = self._fire(env, dist, state, warmstart, control)
            if dist is None:  # unstable: the env's steps decide
                p.set_state(initial_state)
                return None
            if dist.phase == "any":
                active = (times >= dist.start) & (times < dist.start + dist.duration)
                control[active, column : column + 2] = dist.force
        elif dist is not None:
            # The env sets the push before each physics step from the time at that step.
            times = np.cumsum(np.full(steps, m.opt.timestep)) - m.opt.timestep
            active = (times >= dist.start) & (times < dist.start + dist.duration)
            control[active, column : column + 2] = dist.force

        for w in d.warning:
            w.number = 0
        # One rollout, or one per stretch between the judge's checkpoints (each continuing from
        # the last one's state and solver warm start, so the physics is the same).
        bounds = [c for c in (early_stop.checkpoints if early_stop else []) if c < len(actions)]
        states, sensors, start, cut = [], [], 0, None
        for end in [*bounds, len(actions)]:
            part_states, part_sensors = rollout.rollout(
                copy.copy(m),
                d,
                state[None],
                control[None, start * substeps : end * substeps],
                control_spec=_CONTROL,
                initial_warmstart=warmstart[None],
            )
            states.append(part_states[0])
            sensors.append(part_sensors[0])
            state, warmstart, start = part_states[0, -1], d.qacc_warmstart.copy(), end
            if end == len(actions):
                break
            traj, ended = self._record(
                env, obs, actions, commands, task, meta, initial_state, states, sensors, dist
            )
            if traj is None or ended:  # diverged, or the egg reached the floor: nothing left to judge
                break
            if early_stop.cuts(traj, end):
                cut = end
                break
        traj, _ = self._record(env, obs, actions, commands, task, meta, initial_state, states, sensors, dist)
        if traj is not None and cut is not None:
            traj.outcome.update(success=False, reason="cut early")
            traj.meta["cut_at"] = cut
        return traj

    @staticmethod
    def _fire(
        env: EggFlipEnv, dist: Disturbance, state, warmstart, control
    ) -> tuple[np.ndarray, Disturbance | None]:
        """The physics steps' start times and the phase push ``dist`` as the env would fire it
        (still armed if it never does), from a rollout of ``control`` without it; None for the
        push if that rollout is unstable."""
        p = env.physics
        m, d = p.model, p.data
        for w in d.warning:
            w.number = 0
        states, sensors = rollout.rollout(
            copy.copy(m),
            d,
            state[None],
            control[None],
            control_spec=_CONTROL,
            initial_warmstart=warmstart[None],
        )
        states, sensors = states[0], sensors[0]
        times = np.concatenate([[state[0]], states[:-1, 0]])  # each physics step's start time
        if any(d.warning[w].number for w in _INSTABILITY) or not np.isfinite(states).all():
            return times, None
        rows = p.reduce_substeps(sensors, env.substeps)
        column = {name: s.start for name, s in p.sensor_slices.items()}
        height = rows[:, column["egg_pos"] + 2]
        on_floor = fell(rows[:, column["egg_on_floor"]], height, env.scorer.thresholds)
        phase = phase_index(
            rows[:, column["egg_on_blade"]] > 0,
            rows[:, column["egg_on_pan"]] > 0,
            rows[:, column["egg_on_burner"]] > 0,
            on_floor,
            True,
            rows[:, column["egg_on_plate"]] > 0,
        )
        ended = np.flatnonzero(on_floor)
        last = int(ended[0]) if len(ended) else len(rows)  # the env steps no further
        after = states[env.substeps - 1 :: env.substeps, 0]  # the time after each control step
        ready = (after >= dist.start) & (phase == PHASES.index(PUSH_PHASES[dist.phase]))
        fired = np.flatnonzero(ready[:last])
        return times, dist.fired_at(float(after[fired[0]])) if len(fired) else dist

    @staticmethod
    def _record(
        env, obs, actions, commands, task, meta, initial_state, states, sensors, disturbance
    ) -> tuple[Trajectory | None, bool]:
        """The trajectory of the control steps simulated so far (``states``/``sensors``: lists of
        rollouts' physics steps), ending where the egg reached the floor (then True), or None if
        the simulation diverged."""
        states, sensors = np.concatenate(states), np.concatenate(sensors)
        p = env.physics
        m, d = p.model, p.data
        substeps = env.substeps
        rows = p.reduce_substeps(sensors, substeps)
        height = rows[:, p.sensor_slices["egg_pos"].start + 2]
        floor = np.flatnonzero(
            fell(rows[:, p.sensor_slices["egg_on_floor"].start], height, env.scorer.thresholds)
        )
        horizon = int(floor[0]) + 1 if len(floor) else len(rows)
        # Warning counters do not say when: any instability sends the trial to the env, whose
        # per-step checks decide whether it happened before the episode ended.
        unstable = any(d.warning[w].number for w in _INSTABILITY)
        used = slice(0, horizon * substeps)
        if unstable or not (np.isfinite(states[used]).all() and np.isfinite(sensors[used]).all()):
            p.set_state(initial_state)
            return None, True
        rows, actions, commands = rows[:horizon], actions[:horizon], commands[:horizon]
        ends = states[substeps - 1 : horizon * substeps : substeps]
        qpos = 1 + np.asarray(p.spatula_qpos)  # state rows start with time
        qvel = 1 + m.nq + np.asarray(p.spatula_qvel)
        proprio = np.concatenate([obs["proprio"][None], env.proprio(ends[:, qpos], ends[:, qvel], commands)])
        outcome = env.scorer.outcome(task.skill, p.record(rows))
        traj = Trajectory(
            task=task,
            control_hz=1.0 / env.control_dt,
            seed=task.seed,
            initial_state=initial_state,
            disturbance=disturbance,
            actions=actions,
            proprio=proprio,
            sensors=rows,
            outcome=outcome.to_dict(),
            meta=dict(meta),
        )
        return traj, bool(len(floor))


def noise_trials(
    tasks: TaskDistribution, n: int, noise: NoiseSpec, rng: np.random.Generator, **meta: Any
) -> list[Trial]:
    """``n`` random smooth-noise trials (the no-primitive baseline) on tasks drawn from ``tasks``."""
    drawn = tasks.sample_many(rng, n)
    seeds = rng.integers(2**31 - 1, size=n)
    return [Trial(t, NoisePlan(noise, int(s)), dict(meta)) for t, s in zip(drawn, seeds, strict=True)]


def actions_trial(task: TaskSpec, actions: np.ndarray, **meta: Any) -> Trial:
    """A trial that plays fixed normalised ``actions``."""
    return Trial(task, ActionPlan(np.asarray(actions, np.float32)), dict(meta))
