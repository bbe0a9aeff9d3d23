"""Physics scoring: per-step events, egg integrity and per-skill success, from sensor records."""

from robo_coevolve.scoring.events import PHASES, step_events
from robo_coevolve.scoring.scorer import Outcome, Scorer
from robo_coevolve.scoring.thresholds import Thresholds

__all__ = ["PHASES", "Outcome", "Scorer", "Thresholds", "step_events"]
