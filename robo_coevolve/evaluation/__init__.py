"""Evaluation shared by the benchmark commands: held-out seed streams, task sets, success
outcomes, paired margins with 95% intervals, BC-once clones, and markdown/JSON output."""

from robo_coevolve.evaluation.clones import bc_once, config_fields, stored_indices
from robo_coevolve.evaluation.output import table, write_json
from robo_coevolve.evaluation.runs import Run, load_run
from robo_coevolve.evaluation.stats import by_mass, outcomes, paired_margin, rate
from robo_coevolve.evaluation.tasks import HARD, STANDARD, pushed, scoop_set

__all__ = [
    "HARD",
    "STANDARD",
    "Run",
    "bc_once",
    "by_mass",
    "load_run",
    "outcomes",
    "paired_margin",
    "pushed",
    "rate",
    "scoop_set",
    "stored_indices",
    "table",
    "config_fields",
    "write_json",
]
