"""The learner's policy: a vision-language-action model predicting chunks of command changes."""

from robo_coevolve.policy.config import PolicyConfig, PolicyConfigError
from robo_coevolve.policy.vla import VLAPolicy, normalization_stats

__all__ = ["PolicyConfig", "PolicyConfigError", "VLAPolicy", "normalization_stats"]
