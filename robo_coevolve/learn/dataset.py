"""Behaviour-cloning samples from skill-library segments.

Each step ``t`` of a segment is one sample: the observation before action ``t`` (proprioception,
the egg state, the policy-camera image rendered from the stored sim state, the instruction) and
the target *chunk* of the next ``chunk`` actions as deltas from the previous command,
``deltas[k] = actions[t + k] - command_as_action(proprio[t])``, with a mask where the segment
ends before the chunk does. Images are rendered once, with the fast policy settings, from the
states the library stores, so no trial is re-simulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robo_coevolve.action_space import command_as_action
from robo_coevolve.env.rendering import StateRenderer
from robo_coevolve.segment import Segment


@dataclass
class ChunkDataset:
    """Stacked samples; ``segment_index`` says which input segment each row came from."""

    proprio: np.ndarray  # (N, 15) float32
    egg: np.ndarray  # (N, 13) float32
    instruction: list[str]  # (N,)
    deltas: np.ndarray  # (N, chunk, 5) float32
    mask: np.ndarray  # (N, chunk) float32, 1 where the target action exists
    segment_index: np.ndarray  # (N,) int
    time: np.ndarray  # (N,) float32 episode time, s (the sim state's clock)
    image: np.ndarray | None = None  # (N, H, W, 3) uint8

    def __len__(self) -> int:
        return len(self.proprio)

    @classmethod
    def from_segments(
        cls, segments: Sequence[Segment], chunk: int, image_size: int | None = None
    ) -> ChunkDataset:
        if not segments:
            raise ValueError("no segments to build a dataset from: the library is empty for this skill")
        parts: dict[str, list] = {
            k: [] for k in ("proprio", "egg", "deltas", "mask", "segment_index", "time", "image")
        }
        instructions: list[str] = []
        renderer = StateRenderer(image_size) if image_size else None
        try:
            for i, seg in enumerate(segments):
                t = len(seg)
                base = command_as_action(seg.proprio[:t])  # (T, 5)
                padded = np.concatenate([seg.actions, np.repeat(seg.actions[-1:], chunk, axis=0)])
                index = np.arange(t)[:, None] + np.arange(chunk)[None, :]
                parts["deltas"].append(padded[index] - base[:, None, :])
                parts["mask"].append((index < t).astype(np.float32))
                parts["proprio"].append(seg.proprio[:t])
                parts["egg"].append(seg.egg[:t])
                parts["segment_index"].append(np.full(t, i))
                parts["time"].append(seg.states[:t, 0])  # an integration state starts with time
                instructions += [seg.task.instruction] * t
                if renderer is not None:
                    parts["image"].append(np.stack([renderer.render(seg.task, x) for x in seg.states[:t]]))
        finally:
            if renderer is not None:
                renderer.close()
        return cls(
            proprio=np.concatenate(parts["proprio"]).astype(np.float32),
            egg=np.concatenate(parts["egg"]).astype(np.float32),
            instruction=instructions,
            deltas=np.concatenate(parts["deltas"]).astype(np.float32),
            mask=np.concatenate(parts["mask"]),
            segment_index=np.concatenate(parts["segment_index"]),
            time=np.concatenate(parts["time"]).astype(np.float32),
            image=np.concatenate(parts["image"]) if image_size else None,
        )

    @classmethod
    def concat(cls, parts: Sequence[ChunkDataset]) -> ChunkDataset:
        """One dataset of several (e.g. a skill's data and its rehearsal share); segment indices
        are renumbered so they stay distinct."""
        offset, index = 0, []
        for part in parts:
            index.append(part.segment_index + offset)
            offset += int(part.segment_index.max()) + 1 if len(part) else 0
        images = [p.image for p in parts]
        return cls(
            proprio=np.concatenate([p.proprio for p in parts]),
            egg=np.concatenate([p.egg for p in parts]),
            instruction=[i for p in parts for i in p.instruction],
            deltas=np.concatenate([p.deltas for p in parts]),
            mask=np.concatenate([p.mask for p in parts]),
            segment_index=np.concatenate(index),
            time=np.concatenate([p.time for p in parts]),
            image=None if any(i is None for i in images) else np.concatenate(images),
        )

    def subset(self, rows: np.ndarray) -> ChunkDataset:
        return ChunkDataset(
            proprio=self.proprio[rows],
            egg=self.egg[rows],
            instruction=[self.instruction[i] for i in rows],
            deltas=self.deltas[rows],
            mask=self.mask[rows],
            segment_index=self.segment_index[rows],
            time=self.time[rows],
            image=None if self.image is None else self.image[rows],
        )

    def split(self, valid_fraction: float, rng: np.random.Generator) -> tuple[ChunkDataset, ChunkDataset]:
        """Train / validation split by whole segments (neighbouring steps of one segment are
        nearly the same sample, so splitting rows would leak)."""
        segments = np.unique(self.segment_index)
        n_valid = int(round(valid_fraction * len(segments)))
        if valid_fraction > 0 and len(segments) > 1:
            n_valid = max(1, min(n_valid, len(segments) - 1))
        valid = rng.choice(segments, size=n_valid, replace=False) if n_valid else np.array([], int)
        is_valid = np.isin(self.segment_index, valid)
        return self.subset(np.flatnonzero(~is_valid)), self.subset(np.flatnonzero(is_valid))

    def batch(self, rows: np.ndarray) -> dict:
        """A training batch for ``VLAPolicy.loss`` (numpy arrays, instructions as a list)."""
        out = {
            "proprio": self.proprio[rows],
            "egg": self.egg[rows],
            "instruction": [self.instruction[i] for i in rows],
            "deltas": self.deltas[rows],
            "mask": self.mask[rows],
            "time": self.time[rows],
        }
        if self.image is not None:
            out["image"] = self.image[rows]
        return out

    def statistics(self, action_mode: str = "delta") -> dict[str, np.ndarray]:
        """Means and standard deviations for the policy's normalisation; ``delta_*`` are those of
        the head's targets (valid steps only): the deltas, or the actions for ``"absolute"``. In
        float32 like the arrays (``policy.normalization_stats`` is the float64 version for loose
        arrays; the two differ in the last bits, which is enough to change a trained clone)."""
        deltas = self.deltas
        if action_mode == "absolute":
            deltas = deltas + command_as_action(self.proprio)[:, None, :]
        deltas = deltas.reshape(len(self), -1)
        weight = np.repeat(self.mask, self.deltas.shape[-1], axis=1)
        count = np.maximum(weight.sum(0), 1.0)
        mean = (deltas * weight).sum(0) / count
        std = np.sqrt((((deltas - mean) ** 2) * weight).sum(0) / count)
        return {
            "proprio_mean": self.proprio.mean(0),
            "proprio_std": self.proprio.std(0),
            "egg_mean": self.egg.mean(0),
            "egg_std": self.egg.std(0),
            "delta_mean": mean.astype(np.float32),
            "delta_std": std.astype(np.float32),
        }
