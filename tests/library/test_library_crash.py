"""A writer killed with SIGKILL in the middle of a commit loses nothing it had committed."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from robo_coevolve.library import SkillLibrary

WRITER = Path(__file__).with_name("crash_writer.py")
BATCH = 25  # segments per commit: enough that a commit takes a while to kill in the middle of
ROUNDS = 4


def load_writer():
    spec = importlib.util.spec_from_file_location("crash_writer", WRITER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sigkill_mid_commit_keeps_every_committed_segment(tmp_path, trial_file):
    writer = load_writer()
    trial = writer.load_trial(trial_file)
    root = tmp_path / "lib"
    rng = np.random.default_rng(0)
    killed_mid_write = 0
    for round_ in range(ROUNDS):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(trial_file), str(root), str(BATCH)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        committed, durations = None, []
        try:
            for line in proc.stdout:
                word, n, *rest = line.split()
                if word == "committed":
                    committed = int(n)
                    durations.append(float(rest[0]))
                    if len(durations) == 2 + round_ % 2:
                        break
            assert committed is not None, proc.stderr.read()
            # The writer starts its next commit as soon as it reports one: kill it part-way in.
            time.sleep(rng.uniform(0.05, 0.8) * min(durations))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL
        killed_mid_write += any(root.glob(".scoop.*.hdf5.tmp"))

        library = SkillLibrary(root)  # no LibraryError: the live file is the last committed version
        assert not list(root.glob("*.tmp"))
        n = library.count("scoop")
        # The commit in flight is all there (it got renamed into place before the kill) or not at all.
        assert n in (committed, committed + BATCH), (n, committed)
        for j, segment in enumerate(library.segments("scoop")):
            want = writer.segment_for(trial, j)
            assert segment.meta == want.meta
            for key in ("states", "actions", "proprio", "egg", "sensors"):
                np.testing.assert_array_equal(getattr(segment, key), getattr(want, key), err_msg=f"{j} {key}")
    assert killed_mid_write >= ROUNDS // 2, (
        f"only {killed_mid_write} of {ROUNDS} kills landed inside a commit"
    )
