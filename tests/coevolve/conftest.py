from __future__ import annotations

import numpy as np
import pytest
import torch

from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.task_distribution import TaskDistribution


@pytest.fixture(scope="session")
def backend():
    torch.set_num_threads(1)
    with LocalBackend(workers=1) as b:
        yield b


@pytest.fixture(scope="session")
def scoop_modes(backend) -> list[np.ndarray]:
    """Primitive parameters that scooped at least once: a short search's successes."""
    result = PrimitiveSearch(TaskDistribution.for_skill("scoop"), backend, seed=0, population=50).run(200)
    assert result.successes
    return [np.asarray(t.meta["params"]) for t in result.successes[-6:]]
