"""Open-loop trials simulated with ``mujoco.rollout``, recorded exactly as the env would.

For each trial the env draws the start state (``reset`` with the task's seed), the plan turns the
first observation into the episode's actions, and ``mujoco.rollout`` integrates every physics step
in C with the GIL released (so threads run trials in parallel). The result is the same
``Trajectory``, bit for bit, that stepping ``EggFlipEnv`` with those actions gives: same start
state and solver warm start, the same controls and disturbance forces at every physics step, the
env's substep reduction, its early end when the egg falls off the pan, and its scorer.

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
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.plans import ActionPlan, NoisePlan, Plan
from robo_coevolve.scoring import Thresholds
from robo_coevolve.scoring.events import fell
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
        self._envs: dict[tuple[float, float], EggFlipEnv] = {}

    def env_for(self, task: TaskSpec) -> EggFlipEnv:
        """A privileged, image-free env with ``task``'s geometry (cached per geometry)."""
        key = (task.pan_height, task.egg_size)
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
        obs, _ = env.reset(seed=trial.task.seed, options={"task": trial.task})
        actions = np.asarray(trial.plan.actions(obs, env), dtype=np.float32)
        if actions.shape != (env.horizon_steps, 5):
            raise ValueError(f"plan gave actions of shape {actions.shape}, expected ({env.horizon_steps}, 5)")
        actions = np.clip(actions, -1.0, 1.0)
        meta = {**trial.plan.describe(), **trial.meta}
        if not np.isfinite(actions).all():
            raise ValueError(f"plan {meta.get('plan')} gave non-finite actions")
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
        commands = env.action_to_pose(actions)
        control = np.zeros((steps, m.nu + 6 * m.nbody))
        control[:, : m.nu] = np.repeat(commands, substeps, axis=0)
        dist = env.disturbance
        if dist is not None:
            # The env sets the push before each physics step from the time at that step.
            times = np.cumsum(np.full(steps, m.opt.timestep)) - m.opt.timestep
            active = (times >= dist.start) & (times < dist.start + dist.duration)
            column = m.nu + 6 * p.egg_body
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
                env, obs, actions, commands, task, meta, initial_state, states, sensors
            )
            if traj is None or ended:  # diverged, or the egg reached the floor: nothing left to judge
                break
            if early_stop.cuts(traj, end):
                cut = end
                break
        traj, _ = self._record(env, obs, actions, commands, task, meta, initial_state, states, sensors)
        if traj is not None and cut is not None:
            traj.outcome.update(success=False, reason="cut early")
            traj.meta["cut_at"] = cut
        return traj

    @staticmethod
    def _record(
        env, obs, actions, commands, task, meta, initial_state, states, sensors
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
            disturbance=env.disturbance,
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
