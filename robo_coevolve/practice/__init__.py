"""Practice past the teacher: the selected clone improves from its own closed-loop episodes
(``practice.stage.practise``; residual PPO in ``practice.rl``)."""

from robo_coevolve.practice.config import PracticeConfig, RLConfig

__all__ = ["PracticeConfig", "RLConfig"]
