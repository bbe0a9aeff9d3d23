"""Choosing the explore job's rollout backend from the command line."""

import pytest
from hydra import compose, initialize_config_dir

from robo_coevolve.resources import conf_dir
from robo_coevolve.workspace.explore import backend_config


def config(*overrides):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def test_local_by_default_and_ray_by_group_choice():
    assert config().explore.backend._target_ == "robo_coevolve.explore.backend.LocalBackend"
    ray = config("explore/backend=ray", "explore.backend.workers=2").explore.backend
    assert ray._target_ == "robo_coevolve.explore.ray_backend.RayBackend"
    assert ray.workers == 2 and ray.chunk_size == config().explore.backend.chunk_size
    # The rest of the explore settings are untouched by the choice.
    assert config("explore/backend=ray").explore.budget == config().explore.budget


def test_a_backend_given_by_name_loads_its_config_file():
    cfg = config("explore.backend=ray")  # sets a value: the workspace resolves the name
    assert cfg.explore.backend == "ray"
    assert backend_config(cfg.explore.backend)._target_.endswith("RayBackend")
    assert backend_config(config().explore.backend) == config().explore.backend
    with pytest.raises(ValueError, match=r"known backends are \['local', 'ray'\]"):
        backend_config("slurm")
