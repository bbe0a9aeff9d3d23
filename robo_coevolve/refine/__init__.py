"""The refiner: from raw trials to smooth, proven, novel segments for the skill library."""

from robo_coevolve.refine.core_window import core_window, simulate_window
from robo_coevolve.refine.novelty import NoveltyGate, segment_features
from robo_coevolve.refine.refiner import Refiner, RefineReport
from robo_coevolve.refine.smoothing import mean_squared_jerk, smooth_actions

__all__ = [
    "NoveltyGate",
    "RefineReport",
    "Refiner",
    "core_window",
    "mean_squared_jerk",
    "segment_features",
    "simulate_window",
    "smooth_actions",
]
