"""The scripted demo: hand-written scoop and flip motions, judged by physics, rendered to mp4."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig

from robo_coevolve.motion import scripted
from robo_coevolve.trajectory import run_motion
from robo_coevolve.video import render_trial

log = logging.getLogger(__name__)


class ScriptedDemo:
    """Run ``episodes`` scripted trials of each skill; save trajectories, videos and scores.

    Writes into ``output_dir``: ``<skill>_<seed>.npz`` (trajectory), ``<skill>_<seed>.mp4`` and
    ``metrics.json`` (one outcome per trial).
    """

    def __init__(
        self,
        cfg: DictConfig,
        output_dir: str | Path,
        skills=("scoop", "flip"),
        episodes: int = 1,
        video: bool = True,
        camera: str = "overview",
        frame_every: int = 2,
    ):
        unknown = sorted(set(skills) - set(scripted.MOTIONS))
        if unknown:
            raise ValueError(
                f"workspace.skills has {unknown}: scripted motions exist for {sorted(scripted.MOTIONS)}"
            )
        if episodes < 1:
            raise ValueError(f"workspace.episodes={episodes} must be >= 1")
        self.cfg = cfg
        self.output_dir = Path(output_dir)
        self.skills = list(skills)
        self.episodes = episodes
        self.video = video
        self.camera = camera
        self.frame_every = frame_every

    def run(self) -> list[dict]:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        results = []
        for skill in self.skills:
            env = hydra.utils.instantiate(self.cfg.env, skill=skill)
            try:
                for seed in range(self.cfg.seed, self.cfg.seed + self.episodes):
                    traj = run_motion(
                        env, scripted.MOTIONS[skill], seed=seed, meta={"motion": f"scripted.{skill}"}
                    )
                    stem = self.output_dir / f"{skill}_{seed}"
                    traj.save(stem.with_suffix(".npz"))
                    result = {"skill": skill, "seed": seed, **traj.outcome}
                    if self.video:
                        w, h = self.cfg.env.render_size
                        render_trial(traj, stem.with_suffix(".mp4"), self.camera, (w, h), self.frame_every)
                        result["video"] = str(stem.with_suffix(".mp4"))
                    results.append(result)
                    log.info(
                        "%s seed %d: %s (%s) integrity %.2f, peak force %.1f N, max height %.3f m",
                        skill,
                        seed,
                        "SUCCESS" if traj.success else "FAILED",
                        traj.outcome["reason"],
                        traj.outcome["integrity"],
                        traj.outcome["peak_force"],
                        traj.outcome["max_height"],
                    )
            finally:
                env.close()
        (self.output_dir / "metrics.json").write_text(json.dumps(results, indent=2))
        print(f"\n{'skill':6} {'seed':>4}  {'success':7} {'integrity':>9} {'peak N':>7}  reason")
        for r in results:
            print(
                f"{r['skill']:6} {r['seed']:>4}  {str(r['success']):7} {r['integrity']:9.2f} "
                f"{r['peak_force']:7.1f}  {r['reason']}"
            )
        print(f"outputs in {self.output_dir}")
        return results
