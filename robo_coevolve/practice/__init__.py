"""Practice past the teacher: the selected clone improves from its own closed-loop episodes."""

from robo_coevolve.practice.config import PracticeConfig, RLConfig
from robo_coevolve.practice.stage import PracticeError, practise

__all__ = ["PracticeConfig", "PracticeError", "RLConfig", "practise"]
