"""The explore job: search motion primitives for each skill from zero demonstrations.

For each configured skill: mixture-CEM primitive search on the skill's task distribution, the
answer evaluated on held-out tasks, optionally the random smooth-noise baseline, and videos of the
best and a typical failed trial of the last generation. Writes into ``output_dir``:

- ``<skill>/generations.jsonl``: one line per generation (trials so far, success rates, modes),
  appended as the search goes;
- ``<skill>/best.npz``, ``<skill>/failure.npz`` and ``videos/<skill>_best.mp4``,
  ``videos/<skill>_failure.mp4``;
- ``library/``: the refined segments of the answer's demonstrations on fresh tasks
  (``explore.demos``, if the answer succeeds on ``explore.demo_bar`` of them; else of the search's
  latest successes), by ``refine.Refiner`` into a ``library.SkillLibrary`` (robomimic's HDF5
  layout);
- ``summary.json``: per skill, trials, held-out success, modes (named parameters), baseline and
  what the refiner kept.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import hydra
import numpy as np
from omegaconf import DictConfig, OmegaConf

from robo_coevolve.atomic import write_text_atomic
from robo_coevolve.explore import primitives
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.explore.open_loop import noise_trials
from robo_coevolve.explore.search import PrimitiveSearch, SearchConfig, evaluate_params
from robo_coevolve.library import SkillLibrary
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import SKILLS
from robo_coevolve.video import pick_highlights, render_highlights
from robo_coevolve.workspace.build import build

log = logging.getLogger(__name__)


def backend_config(choice) -> DictConfig:
    """The backend's config: ``choice`` as is, or, for a name (``explore.backend=ray`` on the command
    line, which sets a value instead of picking the group), that option of ``explore/backend``."""
    if not isinstance(choice, str):
        return choice
    from robo_coevolve.configs import CONFIGS  # it builds this module's workspace

    known = {name: node for (group, name), node in CONFIGS.items() if group == "explore/backend"}
    if choice not in known:
        raise ValueError(f"explore.backend={choice!r}: known backends are {sorted(known)}")
    return OmegaConf.structured(known[choice])


def search_settings(explore: DictConfig) -> SearchConfig:
    """The primitive search's settings: the ``SearchConfig`` of the ``explore`` config group (its
    other keys are the explore job's and the loop's); a bad value raises ``ConfigError``."""
    keys = ["_target_", *(f.name for f in dataclasses.fields(SearchConfig))]
    return build(OmegaConf.masked_copy(explore, keys), "explore")


def _rate(trajs) -> float:
    return float(np.mean([t.success for t in trajs])) if trajs else 0.0


class ExploreWorkspace:
    """Run the primitive search for ``skills``; see the module docstring for the outputs.

    Args:
        cfg: the whole run config (``cfg.explore`` holds the search settings, ``cfg.env`` the env's).
        output_dir: the run directory.
        skills: skills to search, in order.
        video: render the best and a typical failed trial per skill.
        refine_successes: refine at most this many successes into the run's skill library: the
            answer's demonstrations (``explore.demos``, ``explore.demo_bar``) or else the search's
            latest successes (0: no library).
        camera: camera of the videos.
        frame_every: control steps per video frame.
    """

    def __init__(
        self,
        cfg: DictConfig,
        output_dir: str | Path,
        skills=("scoop", "flip"),
        video: bool = True,
        camera: str = "overview",
        frame_every: int = 2,
        refine_successes: int = 200,
    ):
        unknown = sorted(set(skills) - set(SKILLS))
        if unknown:
            raise ValueError(f"workspace.skills has {unknown}: known skills are {list(SKILLS)}")
        e = cfg.explore
        self.search = search_settings(e)  # validates the search's settings
        if int(e.eval_tasks) < 1:
            raise ValueError(f"explore.eval_tasks={e.eval_tasks} must be >= 1")
        self.backend_config = backend_config(e.backend)
        self.cfg = cfg
        self.output_dir = Path(output_dir)
        self.skills = list(skills)
        self.video = video
        self.camera = camera
        self.frame_every = frame_every
        if refine_successes < 0:
            raise ValueError(f"workspace.refine_successes={refine_successes} must be >= 0")
        self.refine_successes = refine_successes
        self.thresholds = build(cfg.env.thresholds, "env.thresholds")  # judge every trial, replays too
        self.refiner = build(cfg.refine, "refine", thresholds=self.thresholds) if refine_successes else None
        # Build (and so validate) every task distribution before any work starts.
        self.tasks = {skill: self._tasks(skill) for skill in self.skills}

    def _tasks(self, skill: str) -> TaskDistribution:
        return TaskDistribution.for_skill(skill, **build(self.cfg.explore.tasks, "explore.tasks"))

    def run(self) -> dict:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        backend = hydra.utils.instantiate(
            self.backend_config, control_hz=self.cfg.env.control_hz, thresholds=self.thresholds
        )
        library = SkillLibrary(self.output_dir / "library") if self.refiner else None
        summary: dict[str, dict] = {}
        try:
            for k, skill in enumerate(self.skills):
                summary[skill] = self._explore(skill, backend, library, seed=int(self.cfg.seed) + 1000 * k)
                write_text_atomic(self.output_dir / "summary.json", json.dumps(summary, indent=2))
        finally:
            backend.close()
            if self.refiner:
                self.refiner.close()
        header = f"{'skill':6} {'trials':>6} {'search':>7} {'held-out':>9} {'noise':>6} {'library':>8}"
        print(f"\n{header}  modes (toss roll)")
        for skill, s in summary.items():
            noise = "-" if s["noise_baseline"] is None else f"{s['noise_baseline']:.0%}"
            kept = "-" if s["refine"] is None else str(s["library_segments"])
            rolls = " ".join(f"{m['toss_roll']:+.1f}" for m in s["modes"])
            print(
                f"{skill:6} {s['trials']:>6} {s['search_success']:>7.0%} {s['held_out_success']:>9.0%} "
                f"{noise:>6} {kept:>8}  {rolls}"
            )
        print(f"outputs in {self.output_dir}")
        return summary

    def _explore(self, skill: str, backend, library: SkillLibrary | None, seed: int) -> dict:
        e = self.cfg.explore
        tasks = self.tasks[skill]
        out = self.output_dir / skill
        out.mkdir(parents=True, exist_ok=True)
        s = self.search
        search = PrimitiveSearch(
            tasks, backend, seed=seed, population=s.population, keep_successes=library is not None, **s.cem
        )
        with open(out / "generations.jsonl", "w") as f:

            def on_generation(gen, trajs):
                f.write(json.dumps(gen.to_dict()) + "\n")
                f.flush()

            result = s.run(search, on_generation=on_generation, demos=library is not None)
        held_out = evaluate_params(result.best_params, tasks, backend, int(e.eval_tasks), seed=seed + 500)
        noise_rate = None
        if int(e.noise_baseline.trials) > 0:
            spec = NoiseSpec(kind=e.noise_baseline.kind, temperature=float(e.noise_baseline.temperature))
            trials = noise_trials(
                tasks, int(e.noise_baseline.trials), spec, np.random.default_rng(seed + 700)
            )
            noise_rate = _rate(backend.run_trials(trials))
        for name, traj in pick_highlights(result.last_generation).items():
            traj.save(out / f"{name}.npz")
        if self.video:
            w, h = self.cfg.env.render_size
            render_highlights(
                result.last_generation,
                self.output_dir / "videos",
                f"{skill}_",
                self.camera,
                (w, h),
                self.frame_every,
            )
        report = None
        if library is not None:
            bank = [m["meta"]["features"] for m in library.metadata(skill) if "features" in m["meta"]]
            latest = result.examples[-self.refine_successes :]
            segments, report = self.refiner.refine(latest, np.array(bank) if bank else None)
            library.add(segments)
            log.info(
                "%s: refined %d successes: %d smoothed segments still succeed, %d admitted, %d duplicates",
                skill,
                report.successes,
                report.survived,
                report.admitted,
                report.duplicates,
            )
        summary = {
            "trials": result.trials,
            "generations": len(result.history),
            "search_success": result.success_rate,
            "demo_success": result.demo_success,
            "searches": result.searches,
            "polish": result.polish,
            "held_out_success": _rate(held_out),
            "held_out_tasks": len(held_out),
            "noise_baseline": noise_rate,
            "modes": [primitives.family(skill).physical(m) for m in result.modes],
            "mode_selection_success": result.selection,
            "best_params": (
                None if result.best_params is None else primitives.family(skill).physical(result.best_params)
            ),
            "refine": None if report is None else report.summary(),
            "library_segments": None if library is None else library.count(skill),
        }
        log.info(
            "%s: %d trials, held-out success %.0f%% (noise baseline %s)",
            skill,
            result.trials,
            100 * summary["held_out_success"],
            "-" if noise_rate is None else f"{noise_rate:.0%}",
        )
        return summary
