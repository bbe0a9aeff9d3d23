"""success_over_time is the success predicate on every prefix of a trial, vectorised."""

from dataclasses import dataclass

import numpy as np
import pytest

from robo_coevolve.explore import primitives
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.motion import scripted
from robo_coevolve.scoring import Scorer
from robo_coevolve.scoring.success import judge, success_over_time
from robo_coevolve.task_distribution import TaskDistribution


@dataclass(frozen=True)
class ScriptedTossPlan:
    """The scripted toss with another roll: random primitives never toss, so these give the toss
    predicate its successes and failures (a small roll catches the egg right side up)."""

    roll: float

    def actions(self, obs, env):
        motion = scripted.toss(obs, roll=self.roll)
        return env.pose_to_action(motion.targets(env.control_dt, env.horizon_steps))

    def describe(self):
        return {"plan": "scripted toss", "roll": self.roll}


@dataclass(frozen=True)
class ScriptedServePlan:
    """The scripted serve with another draw time: a quick draw leaves the egg on the plate, a slow
    one drags it off, so the serve predicate gets both verdicts."""

    draw_time: float

    def actions(self, obs, env):
        motion = scripted.serve(obs, draw_time=self.draw_time)
        return env.pose_to_action(motion.targets(env.control_dt, env.horizon_steps))

    def describe(self):
        return {"plan": "scripted serve", "draw_time": self.draw_time}


@pytest.mark.parametrize("skill", ["scoop", "flip", "catch", "toss", "serve"])
def test_matches_the_predicate_on_every_prefix(skill):
    sim = OpenLoopSimulator()
    scorer = Scorer(0.02)
    rng = np.random.default_rng(2)
    tasks = TaskDistribution.for_skill(skill).sample_many(rng, 25)
    if skill == "toss":
        plans = [ScriptedTossPlan(r) for r in rng.uniform(0.0, 0.8, 25)]
    elif skill == "serve":
        plans = [ScriptedServePlan(t) for t in rng.uniform(0.04, 0.4, 25)]
    else:
        plans = [PrimitivePlan(p) for p in primitives.sample(rng, 25)]
    checked = held = 0
    for traj in map(sim.run, [Trial(t, p) for t, p in zip(tasks, plans, strict=True)]):
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
