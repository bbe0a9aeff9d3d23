"""A scoop answer of a whole-tree run (seed 1): the primitive the robustness tests perturb."""

import numpy as np
import pytest

SCOOP_ANSWER = [0.295, 0.075, 0.125, 0.199, 0.962, 0.733, 0.696, 0.922, 0.953, 0.169, 0.582, 0.598, 0.431]
SCOOP_ANSWER += [0.806, 0.954]


@pytest.fixture(scope="session")
def scoop_answer() -> np.ndarray:
    return np.array(SCOOP_ANSWER)
