"""The evolution loop: explore, score, refine, store, train and evaluate along the skill tree."""

from robo_coevolve.evolve.loop import EvolutionLoop
from robo_coevolve.evolve.schedule import ExploreSchedule

__all__ = ["EvolutionLoop", "ExploreSchedule"]
