"""Components built from their config group, a bad value reported in one line naming the group."""

from __future__ import annotations

from typing import Any

import hydra
from hydra.errors import InstantiationException
from omegaconf import DictConfig


class ConfigError(ValueError):
    """A config value that cannot build its component; the message names the group and why."""


def build(cfg: DictConfig, group: str, **given: Any) -> Any:
    """Instantiate ``cfg`` (the ``group`` config) with ``given`` arguments from the run (e.g. the
    env's scoring thresholds), turning Hydra's wrapped errors into one line."""
    try:
        return hydra.utils.instantiate(cfg, _convert_="all", **given)
    except InstantiationException as e:
        cause = e.__cause__ or e
        raise ConfigError(f"config group {group!r}: {type(cause).__name__}: {cause}") from None
    except (ValueError, TypeError, KeyError) as e:
        raise ConfigError(f"config group {group!r}: {type(e).__name__}: {e}") from None
