"""``python -m benchmarks.evaluate``: a main-job run's policies on held-out tasks."""
