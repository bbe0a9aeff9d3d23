"""``python -m robo_coevolve``: build the configured workspace and run it (Hydra app)."""

from __future__ import annotations

import logging

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from robo_coevolve import configs
from robo_coevolve.resources import conf_dir

logging.getLogger("OpenGL").setLevel(logging.WARNING)  # PyOpenGL announces its accelerator at INFO
configs.store()  # the config groups' default options, built from the code, before Hydra composes


@hydra.main(config_path=str(conf_dir()), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> None:
    output_dir = HydraConfig.get().runtime.output_dir
    workspace = hydra.utils.instantiate(cfg.workspace, cfg=cfg, output_dir=output_dir, _recursive_=False)
    workspace.run()


if __name__ == "__main__":
    main()
