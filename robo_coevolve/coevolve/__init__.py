"""Agent-data co-evolution: the tasks evolve with the agent (weakness signals, synthesis, pool)."""

from robo_coevolve.coevolve.adversary import AdversaryRound, TaskAdversary
from robo_coevolve.coevolve.answer_search import AnswerRound, AnswerSearch
from robo_coevolve.coevolve.physical_check import PhysicsVerdict, check_physics
from robo_coevolve.coevolve.synthesizer import SynthesisReport, TaskSynthesizer
from robo_coevolve.coevolve.task_pool import PoolEntry, TaskPool, TaskPoolError
from robo_coevolve.coevolve.task_space import TaskSpace

__all__ = [
    "AdversaryRound",
    "AnswerRound",
    "AnswerSearch",
    "TaskAdversary",
    "PhysicsVerdict",
    "PoolEntry",
    "SynthesisReport",
    "TaskPool",
    "TaskPoolError",
    "TaskSpace",
    "TaskSynthesizer",
    "check_physics",
]
