"""SIGKILL a run of the main job at a chosen moment, for the resume tests."""

import os
import signal
import subprocess
import time
from pathlib import Path


def kill_when(command: list[str], marker: Path, timeout: float = 500) -> None:
    """Start ``command`` and SIGKILL it as soon as ``marker`` exists (fails if it exits first)."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        while not marker.exists():
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
