"""Distillation: a student policy trained on a teacher policy's actions.

The teacher labels states with the action chunk it would execute there: its most probable
component's delta chunk, clipped as ``predict_chunk`` clips it, taken from the previous command.
The student is trained by the trainer's loss, its mixture NLL, on those labels; a
``predict_end`` teacher also labels where it deems the motion over (chunk steps with an end
probability above its threshold), which the student's end head learns. Two directions:

- **compression** (the default student): the image policy (camera + instruction +
  proprioception + time) into a small state-only ``VLAPolicy`` (proprioception, the egg state,
  the time and the instruction, no camera);
- **privileged teacher** (``student=`` an image ``PolicyConfig``): the state policy, which reads
  the simulator's egg state, into a policy that sees only the camera, as in "Learning by
  Cheating" (Chen et al., 2019): the loop's fast state policy learns the skills, and the image
  policy learns from one consistent teacher instead of the explorer's many demonstrations.

The labelled states come from

1. the library's segments (the states the teacher was cloned on);
2. the teacher's own closed-loop episodes on fresh tasks (the states the teacher really visits);
3. optionally, DAgger rounds: the student's own closed-loop episodes, labelled by the teacher,
   so the student also learns what the teacher would do where the student drifts to.

Each episode is re-simulated once (``Trajectory.observations``) to recover the images and the
egg state at every step. Several task distributions (one per skill) share one student: each
contributes its own episodes. Each round trains a fresh student on everything gathered so far
(DAgger's aggregate), with normalisation from that data, or with ``warm_start`` the last
round's student further. ``start_states`` adds the first observations of fresh tasks, labelled
without running their episodes: every episode passes through one, and a throw-like skill
(catch) is decided by the first chunk.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from robo_coevolve.action_space import command_as_action
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.learn.dataset import ChunkDataset
from robo_coevolve.learn.evaluator import evaluate_policy
from robo_coevolve.learn.trainer import BCTrainer, TrainConfig
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.segment import Segment
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DistillConfig:
    """Distillation settings: the ``distill`` config group and ``robo-coevolve-distill``.

    Args:
        student: the student's ``PolicyConfig`` (``distill=image``: ``conf/policy/vla.yaml``).
            None: the run's last stage distils nothing (``distill=off``), and a ``Distiller``
            trains the small state-only student of :func:`student_config`.
        hidden: that default student's width.
        use_language: give the default student the instruction (FiLM); None copies the teacher's
            setting.
        segments: library segments labelled per node (its first), in a run's last stage.
        teacher_rollouts: the teacher's closed-loop episodes on fresh tasks, labelled (per task
            distribution).
        start_states: start states of fresh tasks, labelled (per task distribution): the first
            observation of an episode, drawn without running it. An episode's first chunk is
            one sample among the many of its episode, yet a catch is decided by it (the egg
            lands moments after the reset).
        dagger_rounds: rounds of the student's own episodes labelled by the teacher, each followed
            by retraining on everything gathered.
        dagger_rollouts: the student's episodes per DAgger round (per task distribution).
        warm_start: each DAgger round trains the previous round's student further on everything
            gathered (its normalisation kept) instead of a fresh one.
        task_seed: seed of the fresh tasks of those episodes; keep it away from evaluation seeds
            (``evaluate_policy`` draws from 10,000 by default).
        label_batch: states per teacher call when labelling.
        train: the student's behaviour-cloning settings per round (``threads`` None: one per
            core, as nothing else runs then).
        eval_tasks: held-out tasks per node for teacher and student in a run's last stage (None:
            the node's ``eval_tasks``, the loop's own evaluation tasks).
        seed: the student's initialisation and training seed.
    """

    student: PolicyConfig | None = None
    hidden: int = 128
    use_language: bool | None = None
    segments: int = 300
    teacher_rollouts: int = 100
    start_states: int = 3000
    dagger_rounds: int = 2
    dagger_rollouts: int = 100
    warm_start: bool = True
    task_seed: int = 20_000
    label_batch: int = 512
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(steps=3000, batch_size=256, patience=100, threads=None)
    )
    eval_tasks: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.student, Mapping):
            object.__setattr__(self, "student", PolicyConfig(**self.student))
        if isinstance(self.train, Mapping):
            object.__setattr__(self, "train", TrainConfig(**self.train))
        if self.hidden < 1:
            raise ValueError(f"distill.hidden={self.hidden} must be >= 1")
        for name in ("segments", "teacher_rollouts", "start_states", "dagger_rounds", "dagger_rollouts"):
            if getattr(self, name) < 0:
                raise ValueError(f"distill.{name}={getattr(self, name)} must be >= 0")
        if self.student is not None and not (self.segments or self.teacher_rollouts or self.start_states):
            raise ValueError(
                "distill.segments, distill.teacher_rollouts and distill.start_states are 0: "
                "nothing to distill from"
            )
        if self.label_batch < 1:
            raise ValueError(f"distill.label_batch={self.label_batch} must be >= 1")
        if self.eval_tasks is not None and self.eval_tasks < 1:
            raise ValueError(f"distill.eval_tasks={self.eval_tasks} must be >= 1, or null (the nodes')")

    @property
    def enabled(self) -> bool:
        """Whether a run's last stage distils (into ``student``)."""
        return self.student is not None


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


def image_size(teacher: PolicyConfig, student: PolicyConfig) -> int | None:
    """The camera images distillation renders (None: neither reads the camera); raises
    ``ValueError`` for a student that cannot learn the teacher's labels: another chunk or action
    space, or the camera at another size."""
    for name in ("chunk", "action_dim", "action_mode"):
        if getattr(student, name) != getattr(teacher, name):
            raise ValueError(
                f"the student's {name}={getattr(student, name)!r} differs from the teacher's "
                f"{getattr(teacher, name)!r}: it learns the teacher's chunks, so set it to the teacher's"
            )
    sizes = sorted({c.image_size for c in (teacher, student) if c.use_image})
    if len(sizes) > 1:
        raise ValueError(
            f"teacher and student read the camera at {sizes[0]} and {sizes[1]} px: "
            "give the student the teacher's image_size"
        )
    return sizes[0] if sizes else None


def success_by_skill(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Success rate of ``trajectories`` per skill of their tasks."""
    skills = sorted({t.task.skill for t in trajectories})
    return {s: float(np.mean([t.success for t in trajectories if t.task.skill == s])) for s in skills}


def _percent(rates: dict[str, float]) -> str:
    return ", ".join(f"{name} {rate:.0%}" for name, rate in rates.items())


def count_parameters(policy: torch.nn.Module) -> int:
    """Trainable weights (the frozen sentence encoder is not part of a policy)."""
    return sum(p.numel() for p in policy.parameters())


class Distiller:
    """Distils ``teacher`` into a student; see the module docstring.

    Args:
        teacher: the policy to imitate (any ``VLAPolicy``; it is only queried).
        backend: where the closed-loop episodes run.
        config: distillation settings; its ``student`` (None: the small state-only student of
            :func:`student_config`, ``config.hidden`` wide) must have the teacher's chunk and
            action space, and where both read the camera, its size.
    """

    def __init__(self, teacher: VLAPolicy, backend: RolloutBackend, config: DistillConfig | None = None):
        self.teacher = teacher.eval()
        self.backend = backend
        self.config = config or DistillConfig()
        t = teacher.config
        self.student_config = self.config.student or student_config(
            t, self.config.hidden, self.config.use_language
        )
        self.image_size = image_size(t, self.student_config)  # the images the labelled data carry

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
        """``data`` with the teacher's chunks (and ends) as targets, and images only where the
        student reads them."""
        deltas, mask = self.label(self._teacher_inputs(data))
        image = data.image if self.student_config.use_image else None
        return dataclasses.replace(data, deltas=deltas, mask=mask, image=image)

    def from_segments(self, segments: Sequence[Segment]) -> ChunkDataset:
        """The library's states, labelled by the teacher."""
        data = ChunkDataset.from_segments(segments, self.teacher.config.chunk, self.image_size)
        return self._labelled(data)

    def from_trajectories(self, trajectories: Sequence[Trajectory]) -> ChunkDataset:
        """The states before every action of ``trajectories`` (closed-loop episodes from a reset),
        re-simulated for the images and the egg state, labelled by the teacher."""
        parts = {k: [] for k in ("proprio", "egg", "time", "image", "segment_index")}
        instructions: list[str] = []
        for i, traj in enumerate(trajectories):
            t = len(traj)
            if t == 0:
                continue
            obs = traj.observations(image_size=self.image_size)
            parts["proprio"].append(obs["proprio"][:t])
            parts["egg"].append(obs["egg"][:t])
            # The time the policy counts in act(): control steps since the reset.
            parts["time"].append(np.arange(t, dtype=np.float32) / np.float32(traj.control_hz))
            if self.image_size:
                parts["image"].append(obs["image"][:t])
            parts["segment_index"].append(np.full(t, i))
            instructions += [traj.task.instruction] * t
        if not instructions:
            raise ValueError("no steps to distill: every trajectory is empty")
        return self._labelled_rows(parts, instructions)

    def from_starts(
        self, tasks: TaskDistribution | Sequence[TaskDistribution], n: int, seed: int
    ) -> ChunkDataset:
        """The start states of ``n`` fresh tasks of each distribution of ``tasks`` (drawn as
        :meth:`rollouts` draws them), labelled by the teacher: each task's first observation,
        exactly as its closed-loop episode would begin, without running the episode."""
        drawn = self._draw(tasks, n, seed)
        if not drawn:
            raise ValueError("no start states to distill: n is 0")
        parts = {k: [] for k in ("proprio", "egg", "time", "image", "segment_index")}
        env = EggFlipEnv(task=drawn[0], image_size=self.image_size, privileged=True)
        try:
            for i, task in enumerate(drawn):
                obs, _ = env.reset(seed=task.seed, options={"task": task})
                parts["proprio"].append(obs["proprio"][None])
                parts["egg"].append(obs["egg"][None])
                parts["time"].append(np.zeros(1, np.float32))
                if self.image_size:
                    parts["image"].append(obs["image"][None])
                parts["segment_index"].append(np.full(1, i))
        finally:
            env.close()
        return self._labelled_rows(parts, [t.instruction for t in drawn])

    def _labelled_rows(self, parts: dict[str, list[np.ndarray]], instructions: list[str]) -> ChunkDataset:
        """The states of ``parts`` (per-episode arrays of each input), labelled by the teacher."""
        c = self.teacher.config
        n = len(instructions)
        rows = ChunkDataset(
            proprio=np.concatenate(parts["proprio"]).astype(np.float32),
            egg=np.concatenate(parts["egg"]).astype(np.float32),
            instruction=instructions,
            deltas=np.zeros((n, c.chunk, c.action_dim), np.float32),
            mask=np.ones((n, c.chunk), np.float32),
            segment_index=np.concatenate(parts["segment_index"]),
            time=np.concatenate(parts["time"]).astype(np.float32),
            image=np.concatenate(parts["image"]) if self.image_size else None,
        )
        return self._labelled(rows)  # the zero deltas and full mask above are replaced here

    # ----------------------------------------------------------------------------- episodes
    def rollouts(
        self,
        policy: VLAPolicy,
        tasks: TaskDistribution | Sequence[TaskDistribution],
        n: int,
        seed: int,
        **meta,
    ) -> list[Trajectory]:
        """``n`` noiseless closed-loop episodes of ``policy`` on tasks of each distribution of
        ``tasks``, the ``j``-th drawn with ``seed + 1000 * j``."""
        drawn = self._draw(tasks, n, seed)
        return self.backend.run_policy(policy, [PolicyEpisode(t, meta=dict(meta)) for t in drawn])

    @staticmethod
    def _draw(tasks: TaskDistribution | Sequence[TaskDistribution], n: int, seed: int) -> list[TaskSpec]:
        """``n`` tasks of each distribution of ``tasks``, the ``j``-th drawn with ``seed + 1000 * j``."""
        every = [tasks] if isinstance(tasks, TaskDistribution) else list(tasks)
        rngs = [np.random.default_rng(seed + 1000 * j) for j in range(len(every))]
        return [t for d, rng in zip(every, rngs, strict=True) for t in d.sample_many(rng, n)]

    # ------------------------------------------------------------------------------ training
    def train_student(
        self, data: ChunkDataset, output_dir=None, start: VLAPolicy | None = None
    ) -> tuple[VLAPolicy, dict]:
        """A student fitted to the labelled ``data``: a fresh one, or ``start`` trained further
        (a copy, with ``start``'s normalisation kept)."""
        torch.manual_seed(self.config.seed)
        student = VLAPolicy(self.student_config)
        if start is not None:
            student.load_state_dict(start.state_dict())
        train = dataclasses.replace(self.config.train, seed=self.config.seed)
        fit = BCTrainer(student, train, output_dir).fit(data, set_normalization=start is None)
        return student.eval(), fit

    @torch.no_grad()
    def agreement(self, student: VLAPolicy, data: ChunkDataset) -> float:
        """Mean absolute difference between the student's and the teacher's executed actions (the
        first ``execute`` of each chunk, normalised action units, steps the teacher deems past the
        end left out) on labelled ``data``."""
        valid = data.mask[:, : self.teacher.config.execute]
        if not valid.sum():
            return float("nan")
        return float((self.action_errors(student, data, valid.shape[1]) * valid).sum() / valid.sum())

    @staticmethod
    @torch.no_grad()
    def action_errors(student: VLAPolicy, data: ChunkDataset, steps: int) -> np.ndarray:
        """``(N, steps)``: the mean absolute difference, over the action's dimensions, between the
        first ``steps`` actions of the student's chunk and of the label at each state of ``data``."""
        obs = {"proprio": data.proprio, "egg": data.egg, "time": data.time, "instruction": data.instruction}
        if student.config.use_image:
            obs["image"] = data.image
        predicted = student.predict_chunk(obs)[:, :steps]
        target = np.clip(command_as_action(data.proprio)[:, None, :] + data.deltas[:, :steps], -1.0, 1.0)
        return np.abs(predicted - target).mean(-1)

    def distill(
        self,
        segments: Sequence[Segment],
        tasks: TaskDistribution | Sequence[TaskDistribution],
        output_dir=None,
    ) -> tuple[VLAPolicy, dict]:
        """The student distilled from ``segments`` and closed-loop episodes on ``tasks`` (one
        distribution, or one per skill), and a report (samples per source, teacher and student
        episode success per skill, agreement, timings)."""
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
                "success": success_by_skill(trajs),
                "samples": len(sources[-1]),
            }
        if c.start_states:
            sources.append(self.from_starts(tasks, c.start_states, c.task_seed + 100))
            report["start_samples"] = len(sources[-1])
        if not sources:
            raise ValueError("nothing to distill from: no segments, teacher_rollouts=0 and start_states=0")
        report["label_s"] = time.perf_counter() - start
        student = fit = None
        for round_ in range(c.dagger_rounds + 1):
            if round_ > 0:
                # DAgger: where does the student go, and what would the teacher do there?
                trajs = self.rollouts(
                    student, tasks, c.dagger_rollouts, c.task_seed + round_, source=f"student round {round_}"
                )
                sources.append(self.from_trajectories(trajs))
                rates = success_by_skill(trajs)
                report["rounds"][-1]["student_rollout_success"] = rates
                log.info("distill round %d's student: %s", round_ - 1, _percent(rates))
            data = ChunkDataset.concat(sources)
            out = None if output_dir is None else f"{output_dir}/round_{round_}"
            student, fit = self.train_student(data, out, start=student if c.warm_start else None)
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

    def distill_skills(
        self,
        tasks: Mapping[str, TaskDistribution],
        segments: Mapping[str, Sequence[Segment]],
        evaluation: Mapping[str, tuple[int, int]],
        output_dir=None,
        evaluate_teacher: bool = True,
    ) -> tuple[VLAPolicy, dict]:
        """:meth:`distill` on every skill of ``tasks`` (name -> its distribution) from its
        ``segments``, then the student, and the teacher, without noise on ``evaluation[name] =
        (n, seed)`` held-out tasks of each (the same tasks for both). The report adds, per policy,
        ``success`` and failure ``reasons`` per skill, and the student's ``held_out_action_error``
        on the teacher's evaluation episodes, which it never trained on."""
        every = [seg for name in tasks for seg in segments.get(name, ())]
        student, report = self.distill(every, list(tasks.values()), output_dir)
        report["skills"] = list(tasks)
        held_out: list[Trajectory] = []
        policies = {"student": student, **({"teacher": self.teacher} if evaluate_teacher else {})}
        for name, policy in policies.items():
            results = {
                skill: evaluate_policy(policy, tasks[skill], self.backend, n=n, seed=seed)
                for skill, (n, seed) in evaluation.items()
            }
            report[name] = {
                "success": {skill: r.success_rate for skill, r in results.items()},
                "reasons": {skill: r.reasons for skill, r in results.items()},
            }
            if name == "teacher":
                held_out = [t for r in results.values() for t in r.trajectories]
            log.info("distilled: the %s succeeds %s", name, _percent(report[name]["success"]))
        if held_out:
            report["held_out_action_error"] = self.agreement(student, self.from_trajectories(held_out))
        return student, report
