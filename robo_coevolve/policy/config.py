"""The policy's configuration: what it reads, how it encodes it and the shape of what it predicts."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any


class PolicyConfigError(ValueError):
    """An invalid policy configuration, or a checkpoint that does not match its configuration."""


@dataclass(frozen=True)
class PolicyConfig:
    """Configuration of a :class:`~robo_coevolve.policy.VLAPolicy`.

    Args:
        use_image: read the policy camera image.
        image_size: side of the square image the policy reads (the explorer renders this size).
        vision: ``"cnn"`` for the small CNN, or a local directory holding a ``transformers`` vision
            model saved with ``save_pretrained``.
        freeze_vision: keep a pretrained vision backbone's weights fixed (its projection still trains).
        use_egg_state: read the privileged egg state (the state-only variant: no image, egg state on).
        use_time: read the episode time (s since reset; ``act`` counts its own steps at
            ``control_hz``). Demos that wait a varying while before moving make "wait" and "go"
            the same observation; time tells them apart, or a cloned policy can stall forever.
        control_hz: the env's control rate (for the time input).
        use_points: read the depth point cloud.
        num_points: points per cloud.
        use_language: condition on the instruction through FiLM.
        film_scale_input: multiply the (unit-norm) instruction embedding by ``1/sqrt(dim)`` before
            the FiLM layer. Unscaled, AdamW moves FiLM's outputs about ``sqrt(dim)`` times faster
            per step than any other layer's, which destabilised training at small ``min_std``.
            Off by default so that checkpoints saved before it load unchanged.
        language_input: also feed the instruction's embedding, scaled to unit variance per
            dimension, into the trunk's first layer, so that the features themselves depend on the
            skill and not only their modulation: where skills start from the same state, the
            instruction is all that tells them apart. Off by default so that checkpoints load.
        language_model: local directory of the sentence encoder; None for the packaged
            all-MiniLM-L6-v2, resolved on the machine that loads the policy.
        proprio_dim, egg_dim, action_dim: observation and action sizes.
        chunk: future actions predicted per step.
        execute: actions of a chunk executed open loop before re-planning.
        predict_end: also predict, for each step of the chunk, whether it lies past the end of
            the demonstration (the padded steps that training masks out). Once a re-plan predicts
            that the demonstration ends within the chunk, the episode holds its last command to
            the end: the skill knows it is done instead of moving on with actions it never saw
            (a demo ends a moment after its success).
        end_threshold: probability above which the demonstration counts as ending in the chunk.
        hidden: width of the fused features.
        components: Gaussians in the mixture head.
        min_std: floor of each Gaussian's standard deviation, in normalised target units.
        dropout: dropout of the fusion MLP during training.
        input_noise: std of Gaussian noise added to the normalised proprioception and egg state
            during training, so the policy also sees states a little off the demonstrations.
        image_shift: in training, shift each image by a random whole number of pixels, up to this
            many in each direction, with the border repeated (DrQ's random shift; 0: off): the
            camera's features learn to track where things are, not their exact pixels.
        egg_aux: weight of an auxiliary training loss in which a linear probe on the camera's
            features predicts the egg's position, supervised by the simulator's state (0: off).
            The position stays out of the policy's inputs: it shapes what the camera learns to see.
        action_mode: what the head predicts. "delta": each chunk step as a change from the
            previous command (velocity-like: fine-grained, but a re-planned chunk starts from
            wherever the last one left the spatula, so small errors integrate). "absolute": the
            commanded poses themselves (position control, as in Diffusion Policy: no drift, but
            errors are a share of the whole workspace, too coarse for scooping).
        residual_scale: with a value > 0 the policy has a residual head (``policy.residual``) that
            practice trains on top of the frozen base: a correction of each chunk's executed
            steps, in normalised delta units, times this scale. 0: no residual (set by practice,
            not by hand).
        residual_hidden: width of the residual head's hidden layers.
        residual_history: control steps of proprioception before the current one that the
            residual also reads (0: none): how the spatula answered recent commands, from which
            a sluggish servo differs from a stiff one.
    """

    use_image: bool = False
    image_size: int = 64
    vision: str = "cnn"
    freeze_vision: bool = False
    use_egg_state: bool = True
    use_time: bool = True
    control_hz: float = 50.0
    use_points: bool = False
    num_points: int = 256
    use_language: bool = True
    film_scale_input: bool = False
    language_input: bool = False
    language_model: str | None = None
    proprio_dim: int = 15
    egg_dim: int = 13
    action_dim: int = 5
    chunk: int = 8
    execute: int = 2
    predict_end: bool = True
    end_threshold: float = 0.5
    hidden: int = 256
    components: int = 5
    min_std: float = 0.05
    dropout: float = 0.0
    input_noise: float = 0.1
    image_shift: int = 0
    egg_aux: float = 0.0
    action_mode: str = "delta"
    residual_scale: float = 0.0
    residual_hidden: int = 64
    residual_history: int = 0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            kind = _FIELD_TYPES[f.name]
            if kind is bool:
                ok = isinstance(value, bool)
            elif kind is int:
                ok = isinstance(value, int) and not isinstance(value, bool)
            elif kind is float:
                ok = isinstance(value, int | float) and not isinstance(value, bool)
                if ok:
                    object.__setattr__(self, f.name, float(value))
            elif kind == "str?":
                ok = value is None or isinstance(value, str)
            else:
                ok = isinstance(value, str)
            if not ok:
                raise PolicyConfigError(f"PolicyConfig.{f.name} must be {_TYPE_NAMES[kind]}, got {value!r}")
        checks = {
            "image_size": (self.image_size >= 16, "must be >= 16"),
            "vision": (self.vision.strip() != "", "must be 'cnn' or a model directory"),
            "control_hz": (self.control_hz > 0.0, "must be > 0"),
            "num_points": (self.num_points >= 1, "must be >= 1"),
            "language_model": (self.language_model is None or self.language_model.strip() != "", "is empty"),
            "proprio_dim": (self.proprio_dim >= 15, "must be >= 15 (the previous command is at 10:15)"),
            "egg_dim": (self.egg_dim >= 1, "must be >= 1"),
            "action_dim": (self.action_dim >= 1, "must be >= 1"),
            "chunk": (self.chunk >= 1, "must be >= 1"),
            "execute": (1 <= self.execute <= self.chunk, f"must be in [1, chunk={self.chunk}]"),
            "end_threshold": (0.0 < self.end_threshold < 1.0, "must be in (0, 1)"),
            "hidden": (self.hidden >= 1, "must be >= 1"),
            "components": (self.components >= 1, "must be >= 1"),
            "min_std": (self.min_std > 0.0, "must be > 0"),
            "dropout": (0.0 <= self.dropout < 1.0, "must be in [0, 1)"),
            "input_noise": (self.input_noise >= 0.0, "must be >= 0"),
            "image_shift": (
                0 <= self.image_shift < self.image_size // 2,
                f"must be in [0, image_size/2 = {self.image_size // 2})",
            ),
            "egg_aux": (self.egg_aux >= 0.0, "must be >= 0"),
            "action_mode": (self.action_mode in ("delta", "absolute"), "must be 'delta' or 'absolute'"),
            "residual_scale": (self.residual_scale >= 0.0, "must be >= 0 (0: no residual)"),
            "residual_hidden": (self.residual_hidden >= 1, "must be >= 1"),
            "residual_history": (self.residual_history >= 0, "must be >= 0 (0: the current step only)"),
        }
        for name, (ok, problem) in checks.items():
            if not ok:
                raise PolicyConfigError(f"PolicyConfig.{name} {problem}, got {getattr(self, name)!r}")

    @property
    def flat_dim(self) -> int:
        """Size of a flattened action chunk."""
        return self.chunk * self.action_dim

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PolicyConfig:
        if not isinstance(data, dict):
            raise PolicyConfigError(f"a PolicyConfig must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_FIELD_TYPES))
        if unknown:
            raise PolicyConfigError(f"unknown PolicyConfig field(s): {', '.join(unknown)}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PolicyConfig:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise PolicyConfigError(f"PolicyConfig JSON does not parse: {e}") from None
        return cls.from_dict(data)


_TYPE_NAMES = {bool: "a bool", int: "an int", float: "a number", "str": "a str", "str?": "a str or None"}
# The annotations are strings (postponed evaluation), so the runtime checks use this table.
_FIELD_TYPES: dict[str, type | str] = {
    f.name: {"bool": bool, "int": int, "float": float, "str": "str", "str | None": "str?"}[f.type]
    for f in dataclasses.fields(PolicyConfig)
}
