"""The policy and behaviour-cloning settings the learner's unit tests are written for: the bare
model (no input noise, no learned end, a tight mixture floor, 4-step re-planning), batches that
share steps with rehearsal at 0.3, and validation on the trained skill alone, so that the whole
rehearsal is trained on. The shipped defaults (``PolicyConfig()``, ``TrainConfig()``) add
what the loop measured to help; these tests check the mechanisms beneath."""

from robo_coevolve.learn import TrainConfig
from robo_coevolve.policy import PolicyConfig

BARE_POLICY = dict(execute=4, predict_end=False, min_std=1e-3, input_noise=0.0)
BARE_TRAIN = dict(rehearsal_share=0.3, rehearsal_steps="shared", validate_on="current")


def policy_config(**settings) -> PolicyConfig:
    return PolicyConfig(**{**BARE_POLICY, **settings})


def train_config(**settings) -> TrainConfig:
    return TrainConfig(**{**BARE_TRAIN, **settings})
