"""Library segments made from the scripted motions, for tests that need demonstrations without a
search: ``scripted_segments("scoop", 24)``. Each keeps the rest of its trial (``margin_after=None``):
cloned from segments cut 0.2 s after the success, a policy has no data for the rest of the
episode, and a scoop policy fine-tuned on flips forgot how to hold the egg (README, the learner)."""

import numpy as np

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.motion import scripted
from robo_coevolve.refine import Refiner
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import run_motion


def scripted_segments(skill: str, n: int, seed: int = 0) -> list:
    """Refined segments of the scripted motion on ``n`` tasks from the skill's distribution."""
    rng = np.random.default_rng(seed)
    env = EggFlipEnv(skill=skill)
    trajs = []
    for task in TaskDistribution.for_skill(skill).sample_many(rng, n):
        env.reset(seed=task.seed, options={"task": task})
        trajs.append(run_motion(env, scripted.MOTIONS[skill], seed=task.seed))
    env.close()
    refiner = Refiner(margin_after=None, novelty={"min_distance": 0.0})
    segments, _ = refiner.refine(trajs)
    refiner.close()
    return segments
