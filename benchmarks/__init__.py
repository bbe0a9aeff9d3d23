"""Benchmark commands, run from the repository root as ``python -m benchmarks.<command>``."""
