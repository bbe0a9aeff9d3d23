"""Task sets beyond a node's own distribution: pushed tasks, and scoop's hard held-out variants."""

from __future__ import annotations

from dataclasses import replace

from robo_coevolve.task_distribution import TaskDistribution

STANDARD = "standard"
# The hard held-out variants of scoop: each a TaskDistribution.for_skill override, each solvable
# by a primitive search of its own (``benchmarks.coevolve --probe``; a 90 g egg was not).
HARD = {
    "heavy egg (80 g)": dict(egg_mass=0.08, egg_mass_range=0.05),
    "light egg (30 g)": dict(egg_mass=0.03, egg_mass_range=0.05),
    "slippery pan (0.6)": dict(egg_pan_friction=0.6),
    "slippery blade (0.3)": dict(egg_blade_friction=0.3),
    "off-centre (+3, +3 cm)": dict(egg_offset=(0.03, 0.03), egg_offset_range=0.01),
    "off-centre (-3, -3 cm)": dict(egg_offset=(-0.03, -0.03), egg_offset_range=0.01),
}


def scoop_set(name: str) -> TaskDistribution:
    """Scoop's tasks of the hard variant ``name`` (a key of ``HARD``) or of ``STANDARD``."""
    return TaskDistribution.for_skill("scoop", **({} if name == STANDARD else HARD[name]))


def pushed(tasks: TaskDistribution, force: float) -> TaskDistribution:
    """``tasks`` with a ``force`` N push on the egg in each (0: as they are); TaskSpec checks it."""
    return replace(tasks, base=tasks.base.replace(disturbance_force=force)) if force else tasks
