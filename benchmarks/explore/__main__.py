"""The explorer and the refiner from zero demonstrations, one subcommand per question."""

from benchmarks.commands import main
from benchmarks.explore import early_stop, refine, search

main("python -m benchmarks.explore", __doc__, {"search": search, "early-stop": early_stop, "refine": refine})
