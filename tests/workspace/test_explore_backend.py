"""Choosing the explore job's rollout backend from the command line."""

import pytest

from robo_coevolve.configs import compose
from robo_coevolve.workspace.explore import backend_config


def test_local_by_default_and_ray_by_group_choice():
    assert compose().explore.backend._target_ == "robo_coevolve.explore.backend.LocalBackend"
    ray = compose("explore/backend=ray", "explore.backend.workers=2").explore.backend
    assert ray._target_ == "robo_coevolve.explore.ray_backend.RayBackend"
    assert ray.workers == 2 and ray.chunk_size == compose().explore.backend.chunk_size
    # The rest of the explore settings are untouched by the choice.
    assert compose("explore/backend=ray").explore.budget == compose().explore.budget


def test_a_backend_given_by_name_is_that_option_of_the_group():
    cfg = compose("explore.backend=ray")  # sets a value: the workspace resolves the name
    assert cfg.explore.backend == "ray"
    assert backend_config(cfg.explore.backend) == compose("explore/backend=ray").explore.backend
    assert backend_config(compose().explore.backend) == compose().explore.backend
    with pytest.raises(ValueError, match=r"known backends are \['local', 'ray'\]"):
        backend_config("slurm")
