"""The search's settings from the explore config group, checked before any work."""

import pytest
from hydra.errors import ConfigCompositionException

from robo_coevolve.configs import compose
from robo_coevolve.explore.search import PolishConfig
from robo_coevolve.workspace.build import ConfigError
from robo_coevolve.workspace.explore import search_settings


def explore(*overrides):
    return compose(*overrides).explore


def test_polish_comes_from_the_config_and_null_turns_it_off():
    assert search_settings(explore()).polish == PolishConfig()
    assert search_settings(explore("explore.polish.trials=3840")).polish.generations == 2
    assert search_settings(explore("explore.polish=null")).polish is None


def test_bad_polish_settings_name_the_setting_and_the_fix():
    with pytest.raises(ConfigCompositionException, match="trails"):
        explore("explore.polish.trails=10")
    with pytest.raises(ConfigError, match="explore.polish.trials=100 must cover one generation"):
        search_settings(explore("explore.polish.trials=100"))
