"""``python -m robo_coevolve`` (``robo-coevolve``): build the configured workspace and run it (Hydra app).

A user error (an override Hydra cannot merge, a value a component refuses, a damaged skill library,
a run directory that holds another run) ends the job with one line on stderr that names it and the
fix, and exit code 2, before any work where it can be known before.
"""

from __future__ import annotations

import logging
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.errors import HydraException, InstantiationException
from omegaconf import DictConfig

from robo_coevolve import configs
from robo_coevolve.cli.errors import user_message
from robo_coevolve.resources import conf_dir

logging.getLogger("OpenGL").setLevel(logging.WARNING)  # PyOpenGL announces its accelerator at INFO
configs.store()  # the config groups' default options, built from the code, before Hydra composes

KEYS_HINT = "`python -m robo_coevolve --cfg job` lists every key and its value"


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def check_overrides(argv: list[str]) -> None:
    """Compose the config from the command line's overrides as the job will, so that a bad one is
    one line here instead of Hydra's report; a command line with flags or sweeps is Hydra's alone."""
    if any(a.startswith("-") for a in argv):
        return
    overrides = [a for a in argv if not a.lstrip("+~").startswith("hydra.")]
    try:
        cfg = configs.compose(*overrides)
    except HydraException as e:
        lines = [" ".join(str(x).split("\n")[0].split()) for x in (e, e.__cause__) if x is not None]
        fail(f"{': '.join(dict.fromkeys(lines))} ({KEYS_HINT})")
    if cfg.seed < 0:
        fail(f"seed={cfg.seed}: the run's seed must be an integer >= 0 (e.g. seed=0)")


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
def run(cfg: DictConfig) -> None:
    output_dir = HydraConfig.get().runtime.output_dir
    try:
        workspace = hydra.utils.instantiate(cfg.workspace, cfg=cfg, output_dir=output_dir, _recursive_=False)
        workspace.run()
    except Exception as e:
        message = user_message(e)
        if message is None and isinstance(e, InstantiationException):  # a value a component refuses
            message = " ".join(str(e.__cause__ or e).split())
        if message is None:
            raise
        fail(message)


def main() -> None:
    check_overrides(sys.argv[1:])
    run()


if __name__ == "__main__":
    main()
