"""A tiny main-job run shared by the benchmark commands' smoke tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_commands import make_tiny_run


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("bench") / "run")
