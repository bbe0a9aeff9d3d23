"""The evolve job (the main job): the evolution loop along the skill tree, built from the config.

Every component is built here, before any work starts, so a bad override fails in a second with
a message naming it: the skill tree (``skill_tree``), the policy (``policy``), behaviour cloning
(``train``), the explorer's search and schedule (``explore``), the refiner (``refine``), task
co-evolution (``coevolve``), the budget (``budget``) and the last stage's distillation
(``distill``). The run directory then receives what
``EvolutionLoop`` writes; running the job again on the same directory resumes it.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from robo_coevolve.evolve.config import Budget, CloneConfig, CoEvolveConfig, VideoConfig
from robo_coevolve.evolve.loop import EvolutionLoop
from robo_coevolve.learn.distill import DistillConfig, image_size
from robo_coevolve.practice import PracticeConfig
from robo_coevolve.workspace.build import ConfigError, build
from robo_coevolve.workspace.explore import backend_config, search_settings

__all__ = ["ConfigError", "EvolveWorkspace", "build"]

log = logging.getLogger(__name__)


class EvolveWorkspace:
    """Build the loop from ``cfg`` (see the module docstring); ``run`` runs or resumes it.

    Args:
        cfg: the whole run config.
        output_dir: the run directory.
        refine_successes: most (latest) successes refined per iteration.
        video: per-iteration video settings (``every``, ``camera``, ``size``, ``frame_every``).
    """

    def __init__(self, cfg: DictConfig, output_dir: str | Path, refine_successes: int = 300, video=None):
        self.cfg = cfg
        self.output_dir = Path(output_dir)
        e = cfg.explore
        self.tree = build(cfg.skill_tree, "skill_tree")
        policy = build(cfg.policy, "policy")
        self.policy_config = policy.__class__(**{**policy.to_dict(), "control_hz": float(cfg.env.control_hz)})
        self.train = build(cfg.train, "train")
        self.schedule = build(e.schedule, "explore.schedule")
        self.budget = build(cfg.budget, "budget")
        self.coevolve = build(cfg.coevolve, "coevolve") if "coevolve" in cfg else CoEvolveConfig()
        if not isinstance(self.coevolve, CoEvolveConfig):
            raise ConfigError(
                "coevolve must build CoEvolveConfig (check its _target_): use coevolve=default or off"
            )
        self.distill = build(cfg.distill, "distill") if "distill" in cfg else DistillConfig()
        if not isinstance(self.distill, DistillConfig):
            raise ConfigError(
                "distill must build DistillConfig (check its _target_): use distill=image or off"
            )
        if self.distill.enabled:
            student = replace(self.distill.student, control_hz=float(cfg.env.control_hz))
            self.distill = replace(self.distill, student=student)
            try:
                image_size(self.policy_config, self.distill.student)
            except ValueError as err:
                raise ConfigError(f"config group 'distill': {err}") from None
        self.practice = build(cfg.practice, "practice") if "practice" in cfg else PracticeConfig()
        if not isinstance(self.practice, PracticeConfig):
            raise ConfigError(
                "practice must build PracticeConfig (check its _target_): use practice=rl or off"
            )
        self.search = search_settings(e)
        if isinstance(video, DictConfig):
            video = build(video, "workspace.video")
        self.video = video or VideoConfig()
        if self.search.budget <= self.search.select_trials * int(e.cem.max_modes):
            raise ConfigError(
                f"explore.budget={self.search.budget} must exceed explore.select_trials x cem.max_modes"
            )
        names = [n.name for n in self.tree.nodes]
        for name in self.budget.until or ():
            if name not in names:
                raise ConfigError(f"budget.until names {name!r}: the skill tree's nodes are {names}")
        if not isinstance(self.train, CloneConfig) or not isinstance(self.budget, Budget):
            raise ConfigError("train and budget must build CloneConfig and Budget (check their _target_)")
        try:
            self.backend_config = backend_config(e.backend)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        # the env group's scoring thresholds judge every trial: the explorer's, the refiner's replays
        self.thresholds = build(cfg.env.thresholds, "env.thresholds")
        self.refiner = build(cfg.refine, "refine", thresholds=self.thresholds)
        self.refine_successes = refine_successes

    def stored_config(self) -> dict[str, Any]:
        """The config a resumed run must match: all but the budget (a tree may be continued with
        more), where it runs (the rollout backend, the training workers) and the last stage's
        distillation (a finished run may be distilled later)."""
        c = OmegaConf.to_container(self.cfg, resolve=True)
        c.pop("budget", None)
        c.pop("distill", None)
        c.get("explore", {}).pop("backend", None)
        c.get("train", {}).pop("workers", None)
        if c.get("practice", {}).get("method") == "off":  # runs from before the practice stage resume
            c.pop("practice")
        return c

    def backend(self):
        """A new rollout backend as configured (``explore.backend``)."""
        return hydra.utils.instantiate(
            self.backend_config, control_hz=self.cfg.env.control_hz, thresholds=self.thresholds
        )

    def run(self) -> dict:
        backend = self.backend()
        try:
            loop = EvolutionLoop(
                self.tree,
                self.policy_config,
                self.train,
                self.schedule,
                self.search,
                self.refiner,
                backend,
                self.output_dir,
                seed=int(self.cfg.seed),
                budget=self.budget,
                refine_successes=self.refine_successes,
                video=self.video,
                config=self.stored_config(),
                coevolve=self.coevolve,
                distill=self.distill,
                practice=self.practice,
            )
            summary = loop.run()
        finally:
            backend.close()
            self.refiner.close()
        print(
            f"\nstopped: {summary['stopped']} after {summary['iterations']} iteration(s), "
            f"{summary['trials']:,} trials, {summary['elapsed_s'] / 60:.1f} min"
        )
        print(f"{'node':12} {'status':9} {'policy success':>15}")
        for name, status in summary["status"].items():
            s = summary["success"][name]
            print(f"{name:12} {status:9} {'-' if s is None else f'{s:.0%}':>15}")
        for name, r in summary.get("recipes", {}).items():
            print(
                f"recipe {name} ({' -> '.join(r['stages'])}): {r['success']:.0%} of {r['n']} start states, "
                f"its stages' product {r.get('product', float('nan')):.0%}"
            )
        distilled = summary.get("distilled")
        if distilled:
            bars = {n.name: n.mastery for n in self.tree.nodes}
            held = "holds every bar" if distilled["holds"] else "misses a bar"
            minutes = distilled["seconds"] / 60
            print(f"distilled into the student in {minutes:.1f} min ({held}), in distilled/:")
            for name, s in distilled["student"].items():
                print(f"{name:12} {'held' if s >= bars[name] else 'missed':9} {s:>15.0%}")
        print(
            f"outputs in {self.output_dir}: metrics.jsonl, progress.png, skill_tree.png, videos/, library/, "
            "checkpoints/"
        )
        return summary
