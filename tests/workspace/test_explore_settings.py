"""The search's settings from the explore config group, checked before any work."""

import pytest
from hydra import compose, initialize_config_dir

from robo_coevolve.explore.search import PolishConfig
from robo_coevolve.resources import conf_dir
from robo_coevolve.workspace.explore import search_settings


def explore(*overrides):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        return compose("config", overrides=list(overrides)).explore


def test_polish_comes_from_the_config_and_null_turns_it_off():
    assert search_settings(explore()).polish == PolishConfig(**explore().polish)
    assert search_settings(explore("explore.polish.trials=3840")).polish.generations == 2
    assert search_settings(explore("explore.polish=null")).polish is None


def test_bad_polish_settings_name_the_setting_and_the_fix():
    with pytest.raises(ValueError, match=r"explore.polish has no setting \['trails'\].*explore.polish=null"):
        search_settings(explore("+explore.polish.trails=10"))
    with pytest.raises(ValueError, match="explore.polish.trials=100 must cover one generation"):
        search_settings(explore("explore.polish.trials=100"))
