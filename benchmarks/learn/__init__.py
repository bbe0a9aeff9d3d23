"""``python -m benchmarks.learn``: policies cloned from explorer-made skill libraries."""
