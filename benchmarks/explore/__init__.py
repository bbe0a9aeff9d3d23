"""``python -m benchmarks.explore``: the explorer and the refiner, from zero demonstrations."""
