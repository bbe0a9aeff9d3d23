"""Staged behaviour cloning: fit the policy to one skill's segments while rehearsing earlier ones.

Each step draws a batch of which ``rehearsal_share`` comes from earlier skills' data (when given,
each skill an equal part of it) and the rest from the current skill's, and minimises the policy's
loss (the mixture negative log-likelihood of the action chunk). Every skill's segments are split
into train and validation by whole segments; the validation loss, weighted as the batch is, is
measured every ``eval_every`` steps, the best weights are kept (and saved with ``save_pretrained``
when there is an output directory), and training stops early after ``patience`` evaluations
without improvement. Metrics (loss, val loss, samples/s) go to ``metrics.jsonl`` and TensorBoard
in the output directory.

As in Diffusion Policy, the learning rate can follow a cosine decay (``lr_schedule="cosine"``) and
the weights that are validated and kept can be an exponential moving average of the trained ones
(``ema_decay``, torch's ``AveragedModel``): both damp the step-to-step noise of the last iterate.
"""

from __future__ import annotations

import copy
import json
import logging
import logging.handlers
import queue
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from robo_coevolve.learn.dataset import ChunkDataset

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Behaviour-cloning settings.

    Args:
        steps: most optimiser steps (see ``rehearsal_steps``).
        batch_size: samples per step.
        lr, weight_decay: AdamW.
        grad_clip: max gradient norm.
        rehearsal_share: share of each batch from earlier skills (when rehearsal data is given).
        rehearsal_steps: how rehearsal counts against ``steps``: "shared" (``steps`` in all, the
            rehearsal taking its share of each) or "added" (``steps / (1 - rehearsal_share)`` in
            all, so that the trained skill's own data gets as many samples as ``steps`` batches
            would give it alone). Beside two rehearsed skills at a share of 0.5, "shared"
            starves the new skill.
        normalize_on: where the normalisation statistics come from when a fit sets them: "data"
            (the skill being trained) or "all" (its data and the rehearsal's). Pooled with the
            other skills' spread (a caught egg's velocities, a scooped egg's path), the trained
            skill's inputs and actions shrink to a sliver of the normalised range, and its
            clones do worse.
        rehearsal_balance: how a batch's rehearsal share is drawn from the rehearsed skills: "skill"
            (each an equal part, as multi-task behaviour cloning balances its tasks) or "rows"
            (uniformly over all their samples, so a skill with long or many segments crowds out
            one with few).
        validate_on: what the validation loss, and so early stopping and the weights kept, is
            measured on: "all" (the held-out segments of the current skill and of each rehearsed
            one, weighted as a batch is) or "current" (the current skill's alone: an easy new
            skill then stops training before the rehearsed ones are fit again).
        valid_fraction: share of each skill's segments held out for validation.
        eval_every: steps between validation measurements.
        patience: evaluations without a better validation loss before stopping.
        seed: batch sampling and split seed.
        progress: show a progress bar.
        lr_schedule: "constant", or "cosine" (decay to 0 over ``steps``).
        ema_decay: keep, validate and return an exponential moving average of the weights, its
            decay rising to this value (None: the trained weights themselves).
        threads: torch intra-op threads while training (None: torch's default, one per core).
            One by default: beside rollout workers or any other busy process, torch's spinning
            threads slow training on a small machine many times over.
    """

    steps: int = 3000
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-4
    grad_clip: float = 1.0
    rehearsal_share: float = 0.5
    rehearsal_steps: str = "added"
    normalize_on: str = "data"
    rehearsal_balance: str = "skill"
    validate_on: str = "all"
    valid_fraction: float = 0.1
    eval_every: int = 250
    patience: int = 4
    seed: int = 0
    progress: bool = False
    threads: int | None = 1
    lr_schedule: str = "constant"
    ema_decay: float | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "eval_every", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name}={getattr(self, name)} must be >= 1")
        for name in ("rehearsal_share", "valid_fraction"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"train.{name}={getattr(self, name)} must be in [0, 1)")
        if self.lr <= 0:
            raise ValueError(f"train.lr={self.lr} must be > 0")
        if self.normalize_on not in ("data", "all"):
            raise ValueError(f"train.normalize_on={self.normalize_on!r}: use 'data' or 'all'")
        if self.rehearsal_balance not in ("skill", "rows"):
            raise ValueError(f"train.rehearsal_balance={self.rehearsal_balance!r}: use 'skill' or 'rows'")
        if self.validate_on not in ("all", "current"):
            raise ValueError(f"train.validate_on={self.validate_on!r}: use 'all' or 'current'")
        if self.rehearsal_steps not in ("shared", "added"):
            raise ValueError(f"train.rehearsal_steps={self.rehearsal_steps!r}: use 'shared' or 'added'")
        if self.lr_schedule not in ("constant", "cosine"):
            raise ValueError(f"train.lr_schedule={self.lr_schedule!r}: use 'constant' or 'cosine'")
        if self.ema_decay is not None and not 0 < self.ema_decay < 1:
            raise ValueError(f"train.ema_decay={self.ema_decay} must be in (0, 1), or null for no EMA")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"train.threads={self.threads} must be >= 1 or null (torch's default)")


def _ema_with_warmup(max_decay: float, power: float = 2 / 3):
    """An ``AveragedModel`` update whose decay grows as ``1 - (1 + n)^-power`` up to ``max_decay``
    (Diffusion Policy's EMA): a fixed 0.999 from step 1 averages the first, unrelated networks into
    the kept weights, and their clones fail."""

    def update(averaged: torch.Tensor, current: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        decay = min(max_decay, 1.0 - (1.0 + float(n)) ** -power)
        return averaged + (current - averaged) * (1.0 - decay)

    return update


class BCTrainer:
    """Trains a ``VLAPolicy`` in place; see the module docstring."""

    def __init__(self, policy, config: TrainConfig | None = None, output_dir: str | Path | None = None):
        self.policy = policy
        self.config = config or TrainConfig()
        self.output_dir = None if output_dir is None else Path(output_dir)
        self.rng = np.random.default_rng(self.config.seed)

    def _loss(self, data: ChunkDataset, rows: np.ndarray, policy=None) -> torch.Tensor:
        return (self.policy if policy is None else policy).loss(data.batch(rows))

    @torch.no_grad()
    def validation_loss(self, data: ChunkDataset, batch_size: int = 1024, policy=None) -> float:
        """Mean loss of ``policy`` (default: the trained one) over ``data``."""
        if not len(data):
            return float("nan")
        policy = self.policy if policy is None else policy
        policy.eval()
        total = 0.0
        for start in range(0, len(data), batch_size):
            rows = np.arange(start, min(start + batch_size, len(data)))
            total += float(self._loss(data, rows, policy)) * len(rows)
        return total / len(data)

    def _validation(
        self, policy, valid: ChunkDataset, held: list[ChunkDataset], share: float
    ) -> dict[str, float]:
        """The validation losses: the current skill's, the rehearsed skills' (their mean, or with
        ``rehearsal_balance="rows"`` their pooled loss) and ``val_loss``, the criterion, the two
        weighted as a batch weighs them (the current skill's alone with ``validate_on="current"``).
        None of them without validation segments."""
        out = {}
        if len(valid):
            out["current_val_loss"] = self.validation_loss(valid, policy=policy)
        held = [v for v in held if len(v)]
        if held:
            losses = [self.validation_loss(v, policy=policy) for v in held]
            weights = [len(v) for v in held] if self.config.rehearsal_balance == "rows" else None
            out["rehearsal_val_loss"] = float(np.average(losses, weights=weights))
        parts = [(1.0 - share, out.get("current_val_loss")), (share, out.get("rehearsal_val_loss"))]
        parts = [(w, v) for w, v in parts if v is not None and w > 0]
        if parts:
            out["val_loss"] = sum(w * v for w, v in parts) / sum(w for w, _ in parts)
        return out

    def fit(
        self,
        data: ChunkDataset,
        rehearsal: ChunkDataset | Sequence[ChunkDataset] | None = None,
        set_normalization: bool = True,
    ) -> dict:
        """Train on ``data`` (and ``rehearsal``: one data set per rehearsed skill, or one for all);
        returns the history. ``set_normalization`` computes the policy's normalisation (the first
        stage; ``normalize_on`` says from what); later stages keep the statistics the weights were
        trained with."""
        threads = torch.get_num_threads()
        if self.config.threads is not None:
            torch.set_num_threads(self.config.threads)
        try:
            return self._fit(data, rehearsal, set_normalization)
        finally:
            torch.set_num_threads(threads)

    def _fit(
        self,
        data: ChunkDataset,
        rehearsal: ChunkDataset | Sequence[ChunkDataset] | None,
        set_normalization: bool,
    ) -> dict:
        c = self.config
        train, valid = data.split(c.valid_fraction, self.rng)
        parts = _nonempty(rehearsal)
        held: list[ChunkDataset] = []  # each rehearsed skill's validation segments
        if parts and c.validate_on == "all":
            splits = [p.split(c.valid_fraction, self.rng) for p in parts]
            parts, held = [t for t, _ in splits], [v for _, v in splits]
        rehearsal = _Rehearsal(parts, c.rehearsal_balance) if parts else None
        if set_normalization:
            pooled = rehearsal is not None and c.normalize_on == "all"
            stats_from = ChunkDataset.concat([train, *rehearsal.parts]) if pooled else train
            self.policy.set_normalization(stats_from.statistics(self.policy.config.action_mode))
        n_rehearse = int(round(c.rehearsal_share * c.batch_size)) if rehearsal is not None else 0
        share = n_rehearse / c.batch_size
        steps = c.steps
        if n_rehearse and c.rehearsal_steps == "added":
            steps = int(round(c.steps * c.batch_size / (c.batch_size - n_rehearse)))
        optimiser = torch.optim.AdamW(
            [p for p in self.policy.parameters() if p.requires_grad], lr=c.lr, weight_decay=c.weight_decay
        )
        schedule = (
            torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=steps)
            if c.lr_schedule == "cosine"
            else None
        )
        ema = (
            torch.optim.swa_utils.AveragedModel(self.policy, avg_fn=_ema_with_warmup(c.ema_decay))
            if c.ema_decay is not None
            else None
        )
        # The weights validated and kept: the average when there is one.
        kept = ema.module if ema is not None else self.policy
        writer = metrics = None
        if self.output_dir is not None:
            from torch.utils.tensorboard import SummaryWriter

            self.output_dir.mkdir(parents=True, exist_ok=True)
            writer = SummaryWriter(str(self.output_dir / "tensorboard"))
            metrics = open(self.output_dir / "metrics.jsonl", "a")
        best = (float("inf"), None, 0)
        history: list[dict] = []
        bad, seen, start = 0, 0, time.perf_counter()
        bar = tqdm(total=steps, disable=not c.progress, desc="bc", leave=False)
        try:
            for step in range(1, steps + 1):
                self.policy.train()
                rows = self.rng.integers(len(train), size=c.batch_size - n_rehearse)
                loss = self._loss(train, rows)
                if n_rehearse:
                    extra = rehearsal.rows(self.rng, n_rehearse)
                    loss = (1 - share) * loss + share * self.policy.loss(rehearsal.batch(extra))
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.policy.parameters(), c.grad_clip)
                optimiser.step()
                if schedule is not None:
                    schedule.step()
                if ema is not None:
                    ema.update_parameters(self.policy)
                seen += c.batch_size
                bar.update(1)
                if step % c.eval_every and step != steps:
                    continue
                record = {
                    "step": step,
                    "loss": float(loss.detach()),
                    "lr": optimiser.param_groups[0]["lr"],
                    "samples_per_s": seen / (time.perf_counter() - start),
                    **self._validation(kept, valid, held, share),
                }
                val = record.setdefault("val_loss", record["loss"])
                history.append(record)
                bar.set_postfix(loss=f"{record['loss']:.3f}", val=f"{val:.3f}")
                if writer is not None:
                    for k, v in record.items():
                        if k != "step":
                            writer.add_scalar(f"bc/{k}", v, step)
                    metrics.write(json.dumps(record) + "\n")
                    metrics.flush()
                if val < best[0]:
                    best = (val, copy.deepcopy(kept.state_dict()), step)
                    bad = 0
                    if self.output_dir is not None:
                        kept.save_pretrained(self.output_dir / "best")
                else:
                    bad += 1
                    if bad >= c.patience:
                        log.info("early stop at step %d: no better validation loss for %d checks", step, bad)
                        break
        finally:
            bar.close()
            if writer is not None:
                writer.close()
                metrics.close()
        if best[1] is not None:
            self.policy.load_state_dict(best[1])
        self.policy.eval()
        log.info(
            "trained %d steps on %d samples: best validation loss %.4f at step %d",
            history[-1]["step"] if history else 0,
            len(train),
            best[0],
            best[2],
        )
        return {
            "history": history,
            "best_val_loss": best[0],
            "best_step": best[2],
            "steps": history[-1]["step"] if history else 0,
            "seconds": time.perf_counter() - start,
            "train_samples": len(train),
            "valid_samples": len(valid),
            "config": asdict(c),
        }


def _nonempty(rehearsal: ChunkDataset | Sequence[ChunkDataset] | None) -> list[ChunkDataset]:
    parts = [] if rehearsal is None else [rehearsal] if isinstance(rehearsal, ChunkDataset) else rehearsal
    return [p for p in parts if len(p)]


class _Rehearsal:
    """The rehearsed skills' training samples, numbered one after another without copying them
    into one data set, and how a batch draws from them: each skill an equal part ("skill") or
    every sample alike ("rows")."""

    def __init__(self, parts: list[ChunkDataset], balance: str):
        self.parts = parts
        self.sizes = np.array([len(p) for p in parts])
        self.offsets = np.cumsum(self.sizes) - self.sizes
        self.balance = balance

    def rows(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.balance == "rows" or len(self.sizes) == 1:
            return rng.integers(int(self.sizes.sum()), size=n)
        part = rng.integers(len(self.sizes), size=n)
        return self.offsets[part] + rng.integers(0, self.sizes[part])

    def batch(self, rows: np.ndarray) -> dict:
        """``ChunkDataset.batch`` of ``rows`` (numbered as ``rows`` draws them), skill by skill."""
        part = np.searchsorted(self.offsets, rows, side="right") - 1
        pieces = [self.parts[p].batch(rows[part == p] - self.offsets[p]) for p in np.unique(part)]
        return {
            k: [x for b in pieces for x in b[k]]
            if k == "instruction"
            else np.concatenate([b[k] for b in pieces])
            for k in pieces[0]
        }


@dataclass
class CloneJob:
    """One policy to train with :class:`BCTrainer`: ``policy`` as it starts (freshly initialised
    or a copy to fine-tune), torch's random state to train from (``torch.get_rng_state()``, so
    that its input noise does not depend on where or after what it runs), and ``fit``'s
    arguments."""

    policy: torch.nn.Module
    rng_state: torch.Tensor
    config: TrainConfig
    data: ChunkDataset
    rehearsal: ChunkDataset | Sequence[ChunkDataset] | None = None
    set_normalization: bool = True
    output_dir: Path | None = None


def _fit_clone(job: CloneJob) -> tuple[torch.nn.Module, dict]:
    torch.set_rng_state(job.rng_state)
    trainer = BCTrainer(job.policy, job.config, output_dir=job.output_dir)
    return job.policy, trainer.fit(job.data, rehearsal=job.rehearsal, set_normalization=job.set_normalization)


def _fit_clone_logged(job: CloneJob, level: int) -> tuple[torch.nn.Module, dict, list[logging.LogRecord]]:
    """:func:`_fit_clone` in a worker process, which has no logging set up: also returns the
    package's log records at ``level`` and above, made picklable by ``QueueHandler``."""
    records: queue.SimpleQueue = queue.SimpleQueue()
    handler = logging.handlers.QueueHandler(records)
    package = logging.getLogger("robo_coevolve")
    package.setLevel(level)
    package.addHandler(handler)
    package.propagate = False  # the parent emits them
    try:
        policy, fit = _fit_clone(job)
    finally:
        package.removeHandler(handler)
        package.propagate = True
    out = []
    while not records.empty():
        out.append(records.get_nowait())
    return policy, fit, out


def fit_clones(jobs: list[CloneJob], workers: int = 1) -> list[tuple[torch.nn.Module, dict]]:
    """Train every job's policy; returns (trained policy, history) pairs in the jobs' order.

    With ``workers`` > 1 and several jobs, up to ``workers`` of them train at once, each in a
    process of its own (forkserver, one torch thread each by ``TrainConfig.threads``): the policies
    come back trained as they would have been one after another in this process, bit for bit on
    the same CPU (``tests/learn/test_learn.py``). On two cores, a round's two clones then take
    the time of one. What the workers log reaches this process's log,
    each clone's lines together and in the jobs' order, once its clone is back."""
    if workers < 1:
        raise ValueError(f"workers={workers} must be >= 1")
    if workers == 1 or len(jobs) < 2:
        return [_fit_clone(job) for job in jobs]
    from robo_coevolve.worker_processes import process_pool

    level = logging.getLogger("robo_coevolve").getEffectiveLevel()
    out = []
    with process_pool(min(workers, len(jobs))) as pool:
        for policy, fit, records in pool.map(_fit_clone_logged, jobs, [level] * len(jobs)):
            for record in records:
                logger = logging.getLogger(record.name)
                if logger.isEnabledFor(record.levelno):
                    logger.handle(record)
            out.append((policy, fit))
    return out
