"""``assert_same``: two trajectories of one trial are equal, step for step (open loop against the
env, a replay against its original)."""

import numpy as np


def assert_same(a, b):
    assert len(a) == len(b)
    np.testing.assert_array_equal(a.initial_state, b.initial_state)
    np.testing.assert_array_equal(a.actions, b.actions)
    np.testing.assert_array_equal(a.proprio, b.proprio)
    np.testing.assert_array_equal(a.sensors, b.sensors)
    assert a.outcome == b.outcome
    assert a.disturbance == b.disturbance
