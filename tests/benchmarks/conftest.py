"""A tiny main-job run shared by the benchmark commands' smoke tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bench_commands import ROOT, TINY


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("bench") / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={run_dir}", *TINY],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir
