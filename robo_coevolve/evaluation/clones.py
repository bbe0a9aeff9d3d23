"""Policies cloned offline from a run's library as the loop clones them, without its selection."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace

import torch

from robo_coevolve.evaluation.runs import Run
from robo_coevolve.evolve.datasets import latest_indices
from robo_coevolve.learn import ChunkDataset, CloneJob, TrainConfig, fit_clones
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy


def config_fields(section: dict, overrides: str = "{}") -> dict:
    """A resolved config section's fields (``RunState.config``) with ``overrides`` (a JSON object)
    applied, its ``_target_`` dropped: the keyword arguments of the class it configures."""
    return {k: v for k, v in {**section, **json.loads(overrides)}.items() if k != "_target_"}


def stored_indices(
    library: SkillLibrary, skill: str, source: str | None, iteration: int | None, last: int, limit: int
) -> list[int]:
    """The latest ``limit`` segments of ``skill`` from ``source`` (None: any) stored by
    ``iteration`` (None: any up to ``last``, the run's last committed one: an interrupted
    iteration's segments are not the run's yet)."""

    def stored(meta: dict) -> bool:
        k = meta.get("iteration", 0)
        return k == iteration if iteration is not None else k <= last

    return latest_indices([m for m in library.metadata(skill) if stored(m["meta"])], source, limit)


def bc_once(
    run: Run,
    skill: str,
    first: int,
    config: PolicyConfig,
    seeds: Sequence[int],
    extras: Sequence[ChunkDataset | None] = (None,),
) -> list[list[VLAPolicy]]:
    """A fresh policy per training seed of ``seeds``, each cloned once, with the run's training
    settings for a new stage, from the latest ``max_segments`` segments of ``skill`` that
    iteration ``first`` stored, rehearsing those of every other skill stored before it: the
    loop's first training of the node, without its selection. One list of clones per entry of
    ``extras``, rows added to the node's own (None: none); the library is read once and every
    clone trains in one pool."""
    section = run.state.config["train"]
    train = TrainConfig(**{**config_fields(section["fit"]), "progress": False})
    library = SkillLibrary(run.dir / "library")
    image = config.image_size if config.use_image else None

    def data(name: str, iteration: int | None, last: int) -> ChunkDataset | None:
        chosen = stored_indices(library, name, None, iteration, last, int(section["max_segments"]))
        if not chosen:
            return None
        return ChunkDataset.from_segments(library.segments(name, indices=chosen), config.chunk, image)

    own = data(skill, first, first)
    if own is None:
        raise SystemExit(f"{run.dir}: the library holds no {skill} segment of iteration {first}")
    earlier = [d for d in (data(s, None, first - 1) for s in library.skills() if s != skill) if d]
    jobs = []
    for extra in extras:
        rows = own if extra is None else ChunkDataset.concat([own, extra])
        for seed in seeds:
            torch.manual_seed(seed)
            policy = VLAPolicy(config)
            jobs.append(CloneJob(policy, torch.get_rng_state(), replace(train, seed=seed), rows, earlier))
    policies = [policy for policy, _ in fit_clones(jobs, workers=os.cpu_count() or 1)]
    return [policies[i : i + len(seeds)] for i in range(0, len(policies), len(seeds))]
