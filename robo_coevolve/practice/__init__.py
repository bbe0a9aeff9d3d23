"""Practice past the teacher: the selected clone improves from its own closed-loop episodes
(``practice.stage.practise``; residual PPO in ``practice.rl``, preferences in
``practice.preference``)."""

from robo_coevolve.practice.config import PracticeConfig, PreferenceConfig, RLConfig

__all__ = ["PracticeConfig", "PreferenceConfig", "RLConfig"]
