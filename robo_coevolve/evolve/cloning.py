"""Behaviour cloning in the loop: one node's data sets cloned round by round, ``candidates``
policies each, all rehearsing the skills the node must keep."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from robo_coevolve.evolve.config import CloneConfig
from robo_coevolve.evolve.run_state import checkpoint_name
from robo_coevolve.learn import ChunkDataset, CloneJob, fit_clones
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import SkillNode


def rehearsal_share(train: CloneConfig, consolidating: bool, skills: int) -> float:
    """Share of each batch from the ``skills`` other skills a training rehearses:
    ``train.fit.rehearsal_share``, except when ``consolidating`` a forgotten (mastered) node,
    where every skill weighs as much as the node's own, or the others are forgotten in turn."""
    if consolidating and skills:
        return skills / (skills + 1)
    return train.fit.rehearsal_share


class Cloner:
    """Clones ``node``'s named data ``sets`` (the latest ``max_segments`` segments of each)
    in iteration ``k``, ``train.candidates`` policies each, all rehearsing the same ``rehearsed``
    segment lists (one per kept skill). The data are read once; each call is one round (0, then
    each redraw) and returns its candidates (policy, training history) and, for each, the name
    of its set.

    The clones are fresh policies (``refit``, or the run's first training: ``policy`` None) or
    copies of ``policy`` that start a new stage (a node other than ``trained_node``) or
    fine-tune; a node being ``consolidating`` always fine-tunes the kept policy (``Budget``).
    Training logs go under ``output_dir/train/iter_<k>``, under the set's name when there are
    several, a redrawn round's under ``redraw_<round>``."""

    def __init__(
        self,
        train: CloneConfig,
        policy_config: PolicyConfig,
        policy: VLAPolicy | None,
        node: SkillNode,
        k: int,
        sets: dict[str, list],
        rehearsed: list[list],
        rng: np.random.Generator,
        output_dir: Path,
        trained_node: str | None = None,
        consolidating: bool = False,
    ):
        c = policy_config if policy is None else policy.config
        image = c.image_size if c.use_image else None

        def data(segs: list) -> ChunkDataset | None:
            return ChunkDataset.from_segments(segs, c.chunk, image) if segs else None

        earlier = [d for d in (data(segs) for segs in rehearsed) if d]
        self.rehearsal = earlier  # one data set per kept skill (TrainConfig.rehearsal_balance)
        self.share = rehearsal_share(train, consolidating, len(earlier))
        self.current = {}
        for name, segments in sets.items():
            self.current[name] = data(segments[-train.max_segments :])
            if self.current[name] is None:
                raise RuntimeError(
                    f"iteration {k}: the library has no {node.skill} segments to train on (the explorer "
                    "found no success the refiner kept): raise explore.budget or loosen refine settings"
                )
        # consolidating a mastered node fine-tunes the kept policy (Budget), whatever refit says
        consolidating = policy is not None and consolidating
        self.new_stage = (trained_node != node.name or train.refit) and not consolidating
        self.fresh = policy is None or (train.refit and not consolidating)
        self.train = train
        self.policy_config = policy_config
        self.policy = policy
        self.rng = rng
        self.logs = Path(output_dir) / "train" / checkpoint_name(k)

    def __call__(self, draw: int) -> tuple[list[tuple[VLAPolicy, dict]], list[str]]:
        jobs, names = [], []
        for name, samples in self.current.items():
            tag = name if len(self.current) > 1 else None
            jobs += self._jobs(samples, tag, draw)
            names += [name] * self.train.candidates
        return fit_clones(jobs, self.train.workers), names

    def _jobs(self, current: ChunkDataset, tag: str | None = None, draw: int = 0) -> list[CloneJob]:
        """Round ``draw``'s ``train.candidates`` trainings on ``current``, each from its own
        seeds (drawn here, in order, so that where they then run does not change them)."""
        jobs = []
        for i in range(self.train.candidates):
            torch.manual_seed(int(self.rng.integers(2**31)))
            policy = VLAPolicy(self.policy_config) if self.fresh else copy.deepcopy(self.policy)
            config = replace(
                self.train.fit,
                steps=self.train.fit.steps if self.new_stage else self.train.finetune_steps,
                rehearsal_share=self.share,
                seed=int(self.rng.integers(2**31)),
                progress=False,
            )
            logs = self.logs
            if draw:
                logs = logs / f"redraw_{draw}"
            if tag is not None:
                logs = logs / tag
            if self.train.candidates > 1:
                logs = logs / f"candidate_{i}"
            jobs.append(
                CloneJob(policy, torch.get_rng_state(), config, current, self.rehearsal, self.new_stage, logs)
            )
        return jobs
