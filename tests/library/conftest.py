"""Real segments for the library tests: windows of scripted scoop and flip trials, re-simulated
with the state recorded at every step."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.segment import Segment
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import run_motion


def record_trial(task: TaskSpec, seed: int = 0) -> Segment:
    """The whole scripted trial of ``task`` as one Segment, with every per-step state."""
    env = EggFlipEnv(task=task)
    try:
        traj = run_motion(env, scripted.MOTIONS[task.skill], seed=seed)
        assert traj.success
        obs, _ = env.reset_to_state(traj.initial_state, traj.disturbance, task=traj.task)
        states, proprio, egg = [env.physics.get_state()], [obs["proprio"]], [obs["egg"]]
        for action in traj.actions:
            obs, *_ = env.step(action)
            states.append(env.physics.get_state())
            proprio.append(obs["proprio"])
            egg.append(obs["egg"])
        return Segment(
            task=traj.task,
            control_hz=traj.control_hz,
            states=np.array(states),
            disturbance=traj.disturbance,
            actions=traj.actions,
            proprio=np.array(proprio),
            egg=np.array(egg),
            sensors=env.sensor_rows(),
            outcome=traj.outcome,
            meta={"source": "scripted", "seed": seed},
        )
    finally:
        env.close()


def window(trial: Segment, start: int, stop: int, **meta) -> Segment:
    """Steps ``start:stop`` of ``trial`` as a segment of their own."""
    return Segment(
        task=trial.task,
        control_hz=trial.control_hz,
        states=trial.states[start : stop + 1].copy(),
        disturbance=trial.disturbance,
        actions=trial.actions[start:stop].copy(),
        proprio=trial.proprio[start : stop + 1].copy(),
        egg=trial.egg[start : stop + 1].copy(),
        sensors=trial.sensors[start:stop].copy(),
        outcome=dict(trial.outcome, steps=stop - start),
        meta={**trial.meta, "source_step": start, "scores": [0.5, np.float64(0.25)], **meta},
    )


def save_trial(trial: Segment, path: Path) -> Path:
    """``trial`` as an .npz another process can rebuild it from (see ``load_trial``)."""
    header = {"task": trial.task.to_dict(), "control_hz": trial.control_hz, "outcome": trial.outcome}
    np.savez(
        path,
        header=json.dumps(header),
        states=trial.states,
        actions=trial.actions,
        proprio=trial.proprio,
        egg=trial.egg,
        sensors=trial.sensors,
    )
    return path


@pytest.fixture(scope="session")
def trials() -> dict[str, Segment]:
    """One successful scripted trial per skill; flip's has a push, so disturbances round-trip."""
    return {
        "scoop": record_trial(TaskSpec.for_skill("scoop")),
        "flip": record_trial(TaskSpec.for_skill("flip", disturbance_force=0.3)),
    }


@pytest.fixture(scope="session")
def segments(trials) -> dict[str, list[Segment]]:
    """Three distinct windows per skill (the last ends where the trial does)."""
    out = {}
    for skill, trial in trials.items():
        t = len(trial)
        out[skill] = [
            window(trial, 0, 40, part=0),
            window(trial, 30, 100, part=1),
            window(trial, t - 60, t, part=2),
        ]
    return out


@pytest.fixture(scope="session")
def trial_file(trials, tmp_path_factory) -> Path:
    """The scoop trial as an .npz, for writer subprocesses."""
    return save_trial(trials["scoop"], tmp_path_factory.mktemp("trial") / "scoop.npz")
