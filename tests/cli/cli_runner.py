"""Running the console commands as users do: ``python -m robo_coevolve.cli.<verb>``, the form the
console scripts run (they exist only once the package is installed)."""

from __future__ import annotations

import subprocess
import sys


def run_cli(verb: str, *args) -> subprocess.CompletedProcess:
    """``python -m robo_coevolve.cli.<verb> ARGS`` with its output captured."""
    return subprocess.run(
        [sys.executable, "-m", f"robo_coevolve.cli.{verb}", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def refused(proc: subprocess.CompletedProcess) -> str:
    """The line a command that refused its input printed; fails unless that line on stderr was all
    it printed and it exited with 2."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "", proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]
