"""success_over_time is the success predicate on every prefix of a trial, vectorised."""

import numpy as np
import pytest

from robo_coevolve.explore import primitives
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.scoring import Scorer
from robo_coevolve.scoring.success import judge, success_over_time
from robo_coevolve.task_distribution import TaskDistribution


@pytest.mark.parametrize("skill", ["scoop", "flip", "catch"])
def test_matches_the_predicate_on_every_prefix(skill):
    sim = OpenLoopSimulator()
    scorer = Scorer(0.02)
    rng = np.random.default_rng(2)
    trials = [
        Trial(t, PrimitivePlan(p))
        for t, p in zip(
            TaskDistribution.for_skill(skill).sample_many(rng, 25), primitives.sample(rng, 25), strict=True
        )
    ]
    checked = held = 0
    for traj in map(sim.run, trials):
        ev = scorer.events(traj.record())
        over_time = success_over_time(skill, ev, scorer.hold_steps, scorer.thresholds)
        assert over_time[-1] == traj.success
        for e in range(0, len(traj), 3):
            prefix = {k: v[: e + 1] for k, v in ev.items()}
            assert over_time[e] == judge(skill, prefix, scorer.hold_steps, scorer.thresholds)[0]
            checked += 1
            held += bool(over_time[e])
    sim.close()
    assert held > 0 and checked > held  # both verdicts were exercised
