"""The re-planning oracle recovers what the open-loop answer loses to a perturbation."""

import numpy as np
import pytest

from robo_coevolve.evaluation.oracle import replan
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.task_spec import TaskSpec


@pytest.fixture(scope="module")
def backend():
    with LocalBackend(workers=1) as b:
        yield b


def test_the_oracle_recovers_a_push_the_answer_fails(backend, scoop_answer):
    """A 0.6 N push throws the answer's egg off the pan; a search on that very task finds another
    plan that scoops it, and that plan does so again on the same task (the push is the task's)."""
    task = TaskSpec.for_skill("scoop", seed=4, disturbance_force=0.6)
    answer = backend.run_trials([Trial(task, PrimitivePlan(scoop_answer))])[0]
    assert not answer.success
    best = replan([task], [scoop_answer], backend, trials=24, seed=0)[0]
    assert best.success
    params = np.array(best.meta["params"])
    assert np.abs(params - scoop_answer).max() > 0.01
    again = backend.run_trials([Trial(task, PrimitivePlan(params))])[0]
    assert again.success and again.outcome == best.outcome


def test_a_task_the_answer_solves_costs_the_oracle_its_starts_only(backend, scoop_answer):
    tasks = [TaskSpec.for_skill("scoop", seed=s) for s in (0, 1)]
    best = replan(tasks, [scoop_answer], backend, trials=24, seed=0)
    assert all(b.success and b.meta["oracle"] == 0 for b in best)
    np.testing.assert_array_equal(best[0].meta["params"], scoop_answer)


def test_the_oracle_needs_a_trial_and_a_start(backend, scoop_answer):
    with pytest.raises(ValueError, match="at least 1 trial"):
        replan([TaskSpec()], [scoop_answer], backend, trials=0, seed=0)
    with pytest.raises(ValueError, match="at least one start"):
        replan([TaskSpec()], [], backend, trials=4, seed=0)
