"""A library writer to kill: ``python crash_writer.py TRIAL.npz LIBRARY BATCH`` commits batches of
deterministic segments in a loop, printing ``begin <n>`` before and ``committed <n> <seconds>``
after each commit, n being the library's segment count."""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from robo_coevolve.library import SkillLibrary
from robo_coevolve.segment import Segment
from robo_coevolve.task_spec import TaskSpec


def load_trial(path) -> Segment:
    with np.load(path) as z:
        header = json.loads(str(z["header"]))
        arrays = {k: z[k] for k in ("states", "actions", "proprio", "egg", "sensors")}
    return Segment(
        task=TaskSpec.from_dict(header["task"]),
        control_hz=header["control_hz"],
        disturbance=None,
        outcome=header["outcome"],
        meta={},
        **arrays,
    )


def segment_for(trial: Segment, j: int) -> Segment:
    """Segment number ``j`` of the writer: a window of ``trial`` that differs with ``j``."""
    length = 60 + 10 * (j % 7)
    start = (13 * j) % (len(trial) - length)
    return Segment(
        task=trial.task,
        control_hz=trial.control_hz,
        states=trial.states[start : start + length + 1],
        disturbance=None,
        actions=trial.actions[start : start + length],
        proprio=trial.proprio[start : start + length + 1],
        egg=trial.egg[start : start + length + 1],
        sensors=trial.sensors[start : start + length],
        outcome=trial.outcome,
        meta={"id": j, "start": start},
    )


def main(trial_path: str, root: str, batch: int) -> None:
    trial = load_trial(trial_path)
    library = SkillLibrary(root)
    n = library.count(trial.skill)
    while True:
        print(f"begin {n}", flush=True)
        t0 = time.perf_counter()
        library.add([segment_for(trial, j) for j in range(n, n + batch)])
        n += batch
        print(f"committed {n} {time.perf_counter() - t0:.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
