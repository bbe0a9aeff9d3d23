"""The learner's data, training and evaluation (the policy itself is ``robo_coevolve.policy``)."""

from robo_coevolve.learn.dataset import ChunkDataset
from robo_coevolve.learn.distill import DistillConfig, Distiller
from robo_coevolve.learn.evaluator import EvalResult, evaluate_policy, evaluate_tasks
from robo_coevolve.learn.trainer import BCTrainer, CloneJob, TrainConfig, fit_clones

__all__ = [
    "BCTrainer",
    "ChunkDataset",
    "CloneJob",
    "DistillConfig",
    "Distiller",
    "EvalResult",
    "TrainConfig",
    "evaluate_policy",
    "evaluate_tasks",
    "fit_clones",
]
