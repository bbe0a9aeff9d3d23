"""Distillation: a small state-only student of a (vision) teacher policy.

The teacher (e.g. the image policy: camera + instruction + proprioception + time) labels states
with the action chunk it would execute there: its most probable component's delta chunk, clipped
as ``predict_chunk`` clips it, taken from the previous command. The student (a small ``VLAPolicy``
reading proprioception, the egg state, the time and the instruction, no camera) is trained by
the trainer's loss, its mixture NLL, on those labels; a ``predict_end`` teacher also labels where
it deems the motion over (chunk steps with an end probability above its threshold), which the
student's end head learns. The labelled states come from

1. the library's segments (the states the teacher was cloned on);
2. the teacher's own closed-loop episodes on fresh tasks (the states the teacher really visits);
3. optionally, DAgger rounds: the student's own closed-loop episodes, labelled by the teacher,
   so the student also learns what the teacher would do where the student drifts to.

Each episode is re-simulated once (``Trajectory.observations``) to recover the teacher's images
and the student's egg state at every step. Each round trains a fresh student on everything
gathered so far (DAgger's aggregate), with normalisation from that data.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.policies import command_as_action
from robo_coevolve.learn.dataset import ChunkDataset
from robo_coevolve.learn.trainer import BCTrainer, TrainConfig
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.segment import Segment
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistillConfig:
    """Distillation settings.

    Args:
        hidden: the student's width.
        use_language: give the student the instruction (FiLM); None copies the teacher's setting.
        teacher_rollouts: the teacher's closed-loop episodes on fresh tasks, labelled.
        dagger_rounds: rounds of the student's own episodes labelled by the teacher, each followed
            by retraining on everything gathered.
        dagger_rollouts: the student's episodes per DAgger round.
        task_seed: seed of the fresh tasks of those episodes; keep it away from evaluation seeds
            (``evaluate_policy`` draws from 10,000 by default).
        label_batch: states per teacher call when labelling.
        train: the student's behaviour-cloning settings (each round trains from scratch).
        seed: the student's initialisation seed.
    """

    hidden: int = 128
    use_language: bool | None = None
    teacher_rollouts: int = 100
    dagger_rounds: int = 1
    dagger_rollouts: int = 100
    task_seed: int = 20_000
    label_batch: int = 512
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(steps=3000, batch_size=256, patience=100, progress=False)
    )
    seed: int = 0

    def __post_init__(self) -> None:
        if self.hidden < 1:
            raise ValueError(f"distill.hidden={self.hidden} must be >= 1")
        for name in ("teacher_rollouts", "dagger_rounds", "dagger_rollouts"):
            if getattr(self, name) < 0:
                raise ValueError(f"distill.{name}={getattr(self, name)} must be >= 0")
        if self.label_batch < 1:
            raise ValueError(f"distill.label_batch={self.label_batch} must be >= 1")
        if isinstance(self.train, dict):
            object.__setattr__(self, "train", TrainConfig(**self.train))


def student_config(
    teacher: PolicyConfig, hidden: int = 128, use_language: bool | None = None
) -> PolicyConfig:
    """The state-only student of ``teacher``: proprioception + egg state + time (+ instruction),
    no camera or points, ``hidden`` wide; same chunking, mixture and action space as the teacher."""
    return dataclasses.replace(
        teacher,
        use_image=False,
        vision="cnn",
        freeze_vision=False,
        use_points=False,
        use_egg_state=True,
        use_time=True,
        use_language=teacher.use_language if use_language is None else use_language,
        hidden=hidden,
        dropout=0.0,
    )


def count_parameters(policy: torch.nn.Module) -> int:
    """Trainable weights (the frozen sentence encoder is not part of a policy)."""
    return sum(p.numel() for p in policy.parameters())


class Distiller:
    """Distils ``teacher`` into a small state-only student; see the module docstring.

    Args:
        teacher: the policy to imitate (any ``VLAPolicy``; it is only queried).
        backend: where the closed-loop episodes run.
        config: distillation settings.
    """

    def __init__(self, teacher: VLAPolicy, backend: RolloutBackend, config: DistillConfig | None = None):
        self.teacher = teacher.eval()
        self.backend = backend
        self.config = config or DistillConfig()
        self.student_config = student_config(teacher.config, self.config.hidden, self.config.use_language)

    # ------------------------------------------------------------------------------ labels
    @torch.no_grad()
    def label(self, obs: dict) -> tuple[np.ndarray, np.ndarray]:
        """The teacher's executed chunk ``(N, chunk, 5)`` at each state of ``obs`` (the teacher's
        inputs, batched), as deltas from the previous command: what the student is trained on; and
        the mask ``(N, chunk)``: 0 where a ``predict_end`` teacher deems the step past the end."""
        n = len(obs["proprio"])
        c = self.teacher.config
        chunks, masks = [], []
        for start in range(0, n, self.config.label_batch):
            rows = slice(start, min(start + self.config.label_batch, n))
            part = {k: (v[rows] if v is not None else None) for k, v in obs.items()}
            chunk, end = self.teacher.predict(part)
            chunks.append(chunk)
            masks.append(np.ones(chunk.shape[:2], np.float32) if end is None else (end <= c.end_threshold))
        absolute = np.concatenate(chunks) if chunks else np.zeros((0, c.chunk, 5), np.float32)
        mask = np.concatenate(masks).astype(np.float32) if masks else np.zeros((0, c.chunk), np.float32)
        command = command_as_action(np.asarray(obs["proprio"]))
        return (absolute - command[:, None, :]).astype(np.float32), mask

    def _teacher_inputs(self, data: ChunkDataset) -> dict:
        c = self.teacher.config
        return {
            "proprio": data.proprio,
            "egg": data.egg if c.use_egg_state else None,
            "time": data.time,
            "image": data.image if c.use_image else None,
            "instruction": data.instruction,
        }

    def _labelled(self, data: ChunkDataset) -> ChunkDataset:
        """``data`` with the teacher's chunks (and ends) as targets, and no images."""
        deltas, mask = self.label(self._teacher_inputs(data))
        return dataclasses.replace(data, deltas=deltas, mask=mask, image=None)

    def from_segments(self, segments: Sequence[Segment]) -> ChunkDataset:
        """The library's states, labelled by the teacher."""
        c = self.teacher.config
        data = ChunkDataset.from_segments(segments, c.chunk, c.image_size if c.use_image else None)
        return self._labelled(data)

    def from_trajectories(self, trajectories: Sequence[Trajectory]) -> ChunkDataset:
        """The states before every action of ``trajectories`` (closed-loop episodes from a reset),
        re-simulated for the teacher's images and the egg state, labelled by the teacher."""
        c = self.teacher.config
        parts = {k: [] for k in ("proprio", "egg", "time", "image", "segment_index")}
        instructions: list[str] = []
        for i, traj in enumerate(trajectories):
            t = len(traj)
            if t == 0:
                continue
            obs = traj.observations(image_size=c.image_size if c.use_image else None)
            parts["proprio"].append(obs["proprio"][:t])
            parts["egg"].append(obs["egg"][:t])
            # The time the policy counts in act(): control steps since the reset.
            parts["time"].append(np.arange(t, dtype=np.float32) / np.float32(traj.control_hz))
            if c.use_image:
                parts["image"].append(obs["image"][:t])
            parts["segment_index"].append(np.full(t, i))
            instructions += [traj.task.instruction] * t
        if not instructions:
            raise ValueError("no steps to distil: every trajectory is empty")
        chunk = c.chunk
        n = len(instructions)
        data = ChunkDataset(
            proprio=np.concatenate(parts["proprio"]).astype(np.float32),
            egg=np.concatenate(parts["egg"]).astype(np.float32),
            instruction=instructions,
            deltas=np.zeros((n, chunk, c.action_dim), np.float32),
            mask=np.ones((n, chunk), np.float32),
            segment_index=np.concatenate(parts["segment_index"]),
            time=np.concatenate(parts["time"]),
            image=np.concatenate(parts["image"]) if c.use_image else None,
        )
        return self._labelled(data)

    # ----------------------------------------------------------------------------- episodes
    def rollouts(
        self, policy: VLAPolicy, tasks: TaskDistribution, n: int, seed: int, **meta
    ) -> list[Trajectory]:
        """``n`` noiseless closed-loop episodes of ``policy`` on tasks drawn with ``seed``."""
        drawn = tasks.sample_many(np.random.default_rng(seed), n)
        return self.backend.run_policy(policy, [PolicyEpisode(t, meta=dict(meta)) for t in drawn])

    # ------------------------------------------------------------------------------ training
    def train_student(self, data: ChunkDataset, output_dir=None) -> tuple[VLAPolicy, dict]:
        """A fresh student fitted to the labelled ``data``."""
        torch.manual_seed(self.config.seed)
        student = VLAPolicy(self.student_config)
        train = dataclasses.replace(self.config.train, seed=self.config.seed)
        fit = BCTrainer(student, train, output_dir).fit(data)
        return student.eval(), fit

    @torch.no_grad()
    def agreement(self, student: VLAPolicy, data: ChunkDataset) -> float:
        """Mean absolute difference between the student's and the teacher's executed actions (the
        first ``execute`` of each chunk, normalised action units, steps the teacher deems past the
        end left out) on labelled ``data``."""
        valid = data.mask[:, : self.teacher.config.execute]
        if not valid.sum():
            return float("nan")
        e = valid.shape[1]
        obs = {"proprio": data.proprio, "egg": data.egg, "time": data.time, "instruction": data.instruction}
        predicted = student.predict_chunk(obs)[:, :e]
        target = np.clip(command_as_action(data.proprio)[:, None, :] + data.deltas[:, :e], -1.0, 1.0)
        return float((np.abs(predicted - target).mean(-1) * valid).sum() / valid.sum())

    def distill(
        self, segments: Sequence[Segment], tasks: TaskDistribution, output_dir=None
    ) -> tuple[VLAPolicy, dict]:
        """The student distilled from ``segments`` and closed-loop episodes on ``tasks``, and a
        report (samples per source, teacher and student episode success, agreement, timings)."""
        c = self.config
        start = time.perf_counter()
        sources: list[ChunkDataset] = []
        report: dict = {"rounds": []}
        if segments:
            sources.append(self.from_segments(segments))
            report["library_samples"] = len(sources[-1])
        if c.teacher_rollouts:
            trajs = self.rollouts(self.teacher, tasks, c.teacher_rollouts, c.task_seed, source="teacher")
            sources.append(self.from_trajectories(trajs))
            report["teacher_rollouts"] = {
                "episodes": len(trajs),
                "success": float(np.mean([t.success for t in trajs])),
                "samples": len(sources[-1]),
            }
        if not sources:
            raise ValueError("nothing to distil from: no segments and teacher_rollouts=0")
        report["label_s"] = time.perf_counter() - start
        student = fit = None
        for round_ in range(c.dagger_rounds + 1):
            if round_ > 0:
                # DAgger: where does the student go, and what would the teacher do there?
                trajs = self.rollouts(
                    student, tasks, c.dagger_rollouts, c.task_seed + round_, source=f"student round {round_}"
                )
                sources.append(self.from_trajectories(trajs))
                report["rounds"][-1]["student_rollout_success"] = float(np.mean([t.success for t in trajs]))
            data = ChunkDataset.concat(sources)
            out = None if output_dir is None else f"{output_dir}/round_{round_}"
            student, fit = self.train_student(data, out)
            report["rounds"].append(
                {
                    "round": round_,
                    "samples": len(data),
                    "steps": fit["steps"],
                    "train_s": fit["seconds"],
                    "best_val_loss": fit["best_val_loss"],
                }
            )
            log.info("distill round %d: %d samples, %.0f s", round_, len(data), fit["seconds"])
        report["seconds"] = time.perf_counter() - start
        report["student_parameters"] = count_parameters(student)
        report["teacher_parameters"] = count_parameters(self.teacher)
        return student, report
