"""Benchmark commands, run from the repository root as ``python -m benchmarks.<command>``."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering, before MuJoCo is imported
