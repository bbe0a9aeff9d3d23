"""The vision-language-action policy: observation encoders, FiLM by the instruction and a mixture head
over a chunk of future actions, each a change of the previous command.

It predicts ``d_k = a_{t+k} - c_t`` for ``k < chunk``, where ``c_t`` is the previous command as a
normalised action, and in closed loop executes the first ``execute`` actions of each chunk before
asking again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robo_coevolve.action_space import command_as_action
from robo_coevolve.atomic import file_aside, write_text_atomic
from robo_coevolve.policy.config import PolicyConfig, PolicyConfigError
from robo_coevolve.policy.encoders import (
    HFVisionEncoder,
    LanguageEncoder,
    PointNetEncoder,
    SmallCNN,
    default_language_model,
    random_shift,
    shared_language_encoder,
)
from robo_coevolve.policy.heads import GaussianMixture, GMMChunkHead
from robo_coevolve.policy.residual import ResidualExploration, ResidualHead

FORMAT_VERSION = 1
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"

# Std floors: a dim that is constant in the demos (a fixed roll, an egg at rest) must not turn a tiny
# perturbation at run time into a huge normalised input; deltas get a finer floor, as they are outputs.
_INPUT_STD_FLOOR = 1e-2
_DELTA_STD_FLOOR = 1e-3
TIME_SCALE = 1.5  # s: episode time enters as time / TIME_SCALE - 1 (about [-1, 1] over 3 s)


def _first_line(error: BaseException) -> str:
    """Library errors often span lines; ours are one line, so a log or a CLI shows them whole."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def normalization_stats(
    proprio: np.ndarray,
    deltas: np.ndarray,
    mask: np.ndarray | None = None,
    egg: np.ndarray | None = None,
    points: np.ndarray | None = None,
    action_mode: str = "delta",
) -> dict[str, np.ndarray]:
    """Means and stds for :meth:`VLAPolicy.set_normalization` from training arrays: ``proprio (N, 15)``,
    ``deltas (N, chunk, 5)`` from the previous command with ``mask (N, chunk)`` (padded steps left
    out), ``egg (N, 13)``, ``points (N, P, 3)``. ``delta_*`` describe the head's targets: the
    deltas, or for ``action_mode="absolute"`` the actions."""
    proprio = np.asarray(proprio, np.float64)
    deltas = np.asarray(deltas, np.float64)
    if action_mode == "absolute":
        deltas = deltas + command_as_action(proprio)[:, None, :]
    valid = np.ones(deltas.shape[:2]) if mask is None else np.asarray(mask, np.float64)
    weight = np.broadcast_to(valid[..., None], deltas.shape)
    count = np.maximum(weight.sum(0), 1.0)
    delta_mean = (np.where(weight > 0, deltas, 0.0) * weight).sum(0) / count
    delta_var = (np.where(weight > 0, deltas - delta_mean, 0.0) ** 2 * weight).sum(0) / count
    stats = {
        "proprio_mean": proprio.mean(0),
        "proprio_std": proprio.std(0),
        "delta_mean": delta_mean.reshape(-1),
        "delta_std": np.sqrt(delta_var).reshape(-1),
    }
    if egg is not None:
        egg = np.asarray(egg, np.float64)
        stats["egg_mean"], stats["egg_std"] = egg.mean(0), egg.std(0)
    if points is not None:
        flat = np.asarray(points, np.float64).reshape(-1, 3)
        stats["points_mean"], stats["points_std"] = flat.mean(0), flat.std(0)
    return {k: v.astype(np.float32) for k, v in stats.items()}


@dataclass
class ChunkPrediction:
    """What the network predicts for a batch: the ``mixture`` over normalised action chunks
    ``(B, chunk * 5)`` and, with ``predict_end``, ``end_logits (B, chunk)``: that each chunk step
    lies past the demonstration's end; with ``egg_aux``, ``egg_position (B, 3)``: the egg's
    normalised position as the camera's features place it; ``features (B, hidden)``: what the
    heads decoded (the residual reads them)."""

    mixture: GaussianMixture
    end_logits: torch.Tensor | None = None
    egg_position: torch.Tensor | None = None  # (B, 3) normalised, from the camera (egg_aux)
    features: torch.Tensor | None = None


class VLAPolicy(nn.Module):
    """Image, proprioception, egg state and point cloud, as configured, fused by an MLP, modulated by
    FiLM from the instruction's embedding and decoded into a Gaussian mixture over a delta chunk.

    Follows the explorer's policy protocol (``privileged``, ``image_size``, ``reset``, ``act``). The
    sentence encoder is frozen, shared per process and not part of the parameters or checkpoint:
    checkpoints name it and the policy loads it again.

    Args:
        config: what the policy reads and predicts.
    """

    def __init__(self, config: PolicyConfig | None = None):
        super().__init__()
        self.config = config = config or PolicyConfig()
        self.privileged = config.use_egg_state
        self.image_size = config.image_size if config.use_image else None
        flat = config.flat_dim
        for name, size in (("proprio", config.proprio_dim), ("egg", config.egg_dim), ("points", 3)):
            self.register_buffer(f"{name}_mean", torch.zeros(size))
            self.register_buffer(f"{name}_std", torch.ones(size))
        self.register_buffer("delta_mean", torch.zeros(flat))
        self.register_buffer("delta_std", torch.ones(flat))

        width = config.proprio_dim + (config.egg_dim if config.use_egg_state else 0) + int(config.use_time)
        self.vision: nn.Module | None = None
        if config.use_image:
            if config.vision == "cnn":
                self.vision = SmallCNN(config.image_size)
            else:
                if not Path(config.vision).is_dir():
                    raise PolicyConfigError(f"PolicyConfig.vision: no model directory at {config.vision}")
                try:
                    self.vision = HFVisionEncoder(
                        config.vision, config.hidden, config.image_size, freeze=config.freeze_vision
                    )
                except (OSError, ValueError) as e:
                    raise PolicyConfigError(
                        f"PolicyConfig.vision: cannot load {config.vision}: {_first_line(e)}"
                    ) from None
            width += self.vision.output_dim
        # Linear probe of the camera features for the egg's position (egg_aux): training only.
        self.egg_probe: nn.Linear | None = None
        if self.vision is not None and config.egg_aux > 0.0:
            self.egg_probe = nn.Linear(self.vision.output_dim, 3)
        self.points: PointNetEncoder | None = PointNetEncoder() if config.use_points else None
        if self.points is not None:
            width += self.points.output_dim

        if config.language_input and not config.use_language:
            raise PolicyConfigError("PolicyConfig.language_input needs use_language=True")
        h = config.hidden
        self.trunk = nn.Sequential(
            nn.Linear(width, h), nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(h, h)
        )
        # Plain attribute, not a submodule: frozen, shared, and kept out of the state dict.
        self._language: LanguageEncoder | None = None
        self.film: nn.Linear | None = None
        if config.use_language:
            path = config.language_model or default_language_model()
            try:
                self._language = shared_language_encoder(str(path))
            except OSError as e:
                raise PolicyConfigError(
                    f"PolicyConfig.language_model: cannot load {path}: {_first_line(e)}"
                ) from None
            if config.language_input:  # the trunk's first layer reads the embedding too
                self.trunk[0] = nn.Linear(width + self._language.dim, h)
            self.film = nn.Linear(self._language.dim, 2 * h)
            with torch.no_grad():  # identity modulation at the start; the instruction's effect is learnt
                self.film.weight.zero_()
                self.film.bias.zero_()
        self.post = nn.Sequential(nn.ReLU(), nn.Dropout(config.dropout), nn.Linear(h, h), nn.ReLU())
        self.head = GMMChunkHead(h, flat, config.components, config.min_std)
        # Logits that each chunk step lies past the demonstration's end (predict_end).
        self.end_head: nn.Linear | None = nn.Linear(h, config.chunk) if config.predict_end else None
        # Practice's correction of the executed steps (residual_scale > 0), on the frozen base.
        self.residual: ResidualHead | None = self._new_residual() if config.residual_scale > 0.0 else None
        # Set by practice while it explores (a plain attribute: never in the checkpoint).
        self.exploration: ResidualExploration | None = None
        self._plan: np.ndarray | None = None
        self._ended = np.zeros(0, bool)  # (B,) episodes whose motion is over: they hold _last
        self._last: np.ndarray | None = None  # (B, 5) the actions returned last
        self._cursor = 0
        self._steps = 0
        self._seen: list[np.ndarray] = []  # the last residual_history proprio observations, oldest first

    # ----------------------------------------------------------------------------------- inputs
    @property
    def language_encoder(self) -> LanguageEncoder | None:
        return self._language

    def _device(self) -> torch.device:
        return self.delta_mean.device

    def _tensor(self, x: Any, dtype: torch.dtype | None = torch.float32) -> torch.Tensor:
        t = x if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))
        return t.to(device=self._device(), dtype=dtype if dtype is not None else t.dtype)

    def encode_language(self, instructions: list[str]) -> torch.Tensor:
        """Instruction embeddings ``(B, E)`` on the policy's device (cached per distinct text)."""
        if self._language is None:
            raise ValueError("this policy has use_language=False")
        return self._language(list(instructions)).to(self._device())

    def set_normalization(self, stats: dict[str, np.ndarray]) -> None:
        """Set any of ``{proprio,egg,points,delta}_{mean,std}``; ``delta_*`` may be ``(chunk*5,)``,
        ``(chunk, 5)`` or one ``(5,)`` for every step of the chunk. Stds are floored."""
        sizes = {
            "proprio": self.config.proprio_dim,
            "egg": self.config.egg_dim,
            "points": 3,
            "delta": self.config.flat_dim,
        }
        for key, value in stats.items():
            name, _, kind = key.rpartition("_")
            if name not in sizes or kind not in ("mean", "std"):
                raise ValueError(f"unknown normalization statistic {key!r}")
            v = np.asarray(value, np.float64).reshape(-1)
            if name == "delta" and v.size == self.config.action_dim:
                v = np.tile(v, self.config.chunk)
            if v.size != sizes[name]:
                raise ValueError(
                    f"normalization statistic {key!r} has {v.size} values, expected {sizes[name]}"
                )
            if not np.all(np.isfinite(v)):
                raise ValueError(f"normalization statistic {key!r} is not finite")
            if kind == "std":
                v = np.maximum(v, _DELTA_STD_FLOOR if name == "delta" else _INPUT_STD_FLOOR)
            getattr(self, key).copy_(torch.as_tensor(v, dtype=torch.float32))

    # ---------------------------------------------------------------------------------- network
    def forward(self, batch: dict) -> ChunkPrediction:
        """The prediction for ``batch``: ``proprio (B, 15)``, plus as configured ``egg (B, 13)``,
        ``image (B, H, W, 3)`` uint8, ``points (B, N, 3)`` and either ``language (B, E)``
        embeddings or ``instruction`` (B strings). Tensors or arrays."""
        features, seen = self.features(batch)
        end = None if self.end_head is None else self.end_head(features)
        egg = None if self.egg_probe is None else self.egg_probe(seen)
        return ChunkPrediction(self.head(features), end, egg, features)

    @property
    def executed_dim(self) -> int:
        """Size of the executed steps of a flattened chunk (what the residual corrects)."""
        return self.config.execute * self.config.action_dim

    def corrected(self, mode: torch.Tensor, correction: torch.Tensor) -> torch.Tensor:
        """The normalised chunk ``mode (B, chunk * 5)`` with ``correction (B, execute * 5)``, the
        residual's unscaled output, added to its executed steps times ``residual_scale``."""
        n = self.executed_dim
        return torch.cat([mode[:, :n] + self.config.residual_scale * correction, mode[:, n:]], dim=-1)

    def with_residual(self, scale: float, history: int = 0) -> VLAPolicy:
        """This policy with a fresh residual head of ``scale`` (0: none) reading ``history``
        earlier control steps of proprioception, in place: a fresh residual changes no action."""
        self.config = replace(self.config, residual_scale=float(scale), residual_history=int(history))
        self.residual = self._new_residual().to(self._device()) if scale > 0.0 else None
        return self

    def _new_residual(self) -> ResidualHead:
        c = self.config
        history = c.residual_history * c.proprio_dim
        return ResidualHead(c.hidden, self.executed_dim, c.residual_hidden, history)

    def residual_history(self, batch: dict) -> torch.Tensor | None:
        """The residual's history input ``(B, residual_history * proprio_dim)``: the batch's
        ``proprio_history (B, residual_history, proprio_dim)``, oldest first, normalised as the
        proprioception is (None: the residual reads no history)."""
        k = self.config.residual_history
        if not k:
            return None
        history = self._tensor(self._require(batch, "proprio_history"))
        return ((history - self.proprio_mean) / self.proprio_std).flatten(1)

    def features(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The fused, instruction-modulated features ``(B, hidden)`` that the heads decode, and the
        camera's own features (None without an image)."""
        cfg = self.config
        seen = None
        proprio = self._tensor(batch["proprio"])
        features = [(proprio - self.proprio_mean) / self.proprio_std]
        if cfg.use_egg_state:
            egg = self._tensor(self._require(batch, "egg"))
            features.append((egg - self.egg_mean) / self.egg_std)
        if self.training and cfg.input_noise > 0.0:  # the states a drifting closed loop visits
            features = [f + cfg.input_noise * torch.randn_like(f) for f in features]
        if cfg.use_time:
            time = self._tensor(self._require(batch, "time")).reshape(-1, 1)
            features.append(time / TIME_SCALE - 1.0)
        if self.vision is not None:
            images = self._tensor(self._require(batch, "image"), dtype=None)
            if self.training and cfg.image_shift > 0:
                images = random_shift(images, cfg.image_shift)
            seen = self.vision(images)
            features.append(seen)
        if self.points is not None:
            points = self._tensor(self._require(batch, "points"))
            features.append(self.points((points - self.points_mean) / self.points_std))
        language = None
        if self.film is not None:
            if batch.get("language") is not None:
                language = self._tensor(batch["language"])
            else:
                language = self.encode_language(self._require(batch, "instruction"))
        if cfg.language_input:  # unit-norm embedding -> unit variance per dimension
            features.append(language * language.shape[-1] ** 0.5)
        h = self.trunk(torch.cat(features, dim=-1))
        if language is not None:
            if cfg.film_scale_input:
                language = language * language.shape[-1] ** -0.5
            gamma, beta = self.film(language).chunk(2, dim=-1)
            h = h * (1.0 + gamma) + beta
        return self.post(h), seen

    @staticmethod
    def _require(batch: dict, key: str):
        if batch.get(key) is None:
            raise KeyError(f"the policy's config needs {key!r} in the batch")
        return batch[key]

    def targets(self, batch: dict) -> torch.Tensor:
        """The head's raw targets ``(B, chunk * 5)`` for the batch's ``deltas (B, chunk, 5)`` (actions
        minus the previous command): those deltas, or with ``action_mode="absolute"`` the actions."""
        deltas = self._tensor(batch["deltas"])
        if self.config.action_mode == "absolute":
            deltas = deltas + self._tensor(command_as_action(np.asarray(batch["proprio"]))).unsqueeze(1)
        return deltas.reshape(deltas.shape[0], -1)

    def loss(self, batch: dict) -> torch.Tensor:
        """Mixture NLL of the batch's action chunk (``deltas (B, chunk, 5)`` from the previous
        command; raw, converted and normalised here) where ``mask (B, chunk)`` is 1 (all steps when
        there is no mask); with ``predict_end``, plus the binary cross-entropy of the mask's 0s
        (steps past the demonstration's end), summed over the chunk; with ``egg_aux``, plus that
        weight times the squared error of the camera's egg position (``egg (B, 13)`` needed)."""
        flat = self.targets(batch)
        b, chunk = flat.shape[0], self.config.chunk
        target = (flat - self.delta_mean) / self.delta_std
        valid = batch.get("mask")
        valid = None if valid is None else self._tensor(valid).reshape(b, chunk)
        mask = None if valid is None else valid.unsqueeze(-1).expand(b, chunk, self.config.action_dim)
        prediction = self(batch)
        loss = prediction.mixture.nll(target, None if mask is None else mask.reshape(b, -1))
        if prediction.end_logits is not None:
            ended = torch.zeros(b, chunk, device=flat.device) if valid is None else 1.0 - valid
            loss = (
                loss
                + F.binary_cross_entropy_with_logits(prediction.end_logits, ended, reduction="none")
                .sum(-1)
                .mean()
            )
        if prediction.egg_position is not None:
            egg = self._tensor(self._require(batch, "egg"))[:, :3]
            target = (egg - self.egg_mean[:3]) / self.egg_std[:3]
            loss = (
                loss
                + self.config.egg_aux
                * F.mse_loss(prediction.egg_position, target, reduction="none").sum(-1).mean()
            )
        return loss

    def predict_chunk(self, obs: dict) -> np.ndarray:
        """Absolute normalised actions ``(B, chunk, 5)`` from the most probable component: the
        previous command plus its delta chunk (or its poses, ``action_mode="absolute"``), clipped
        to [-1, 1]. Runs in eval mode."""
        return self.predict(obs)[0]

    def predict(self, obs: dict) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`predict_chunk`'s actions (with the residual's mean correction, if any) and, with
        ``predict_end``, the probability ``(B, chunk)`` that each of their steps lies past the
        demonstration's end (else None)."""
        chunk, end, _ = self._predict(obs, None)
        return chunk, end

    @torch.no_grad()
    def _predict(
        self, obs: dict, exploration: ResidualExploration | None
    ) -> tuple[np.ndarray, np.ndarray | None, dict[str, np.ndarray] | None]:
        """:meth:`predict`, the residual's correction drawn from ``exploration`` when given; then
        also what the decision saw and drew (``features``, ``base``, ``sample``, ``log_prob``)."""
        was_training = self.training
        self.eval()
        decision = None
        try:
            prediction = self(obs)
            mode = prediction.mixture.mode()
            if self.residual is not None:
                base = mode[:, : self.executed_dim]
                history = self.residual_history(obs)
                correction = self.residual(prediction.features, base, history)
                if exploration is not None:
                    correction, log_prob = exploration.sample(correction)
                    decision = {
                        "features": prediction.features.float().cpu().numpy(),
                        "base": base.float().cpu().numpy(),
                        "sample": correction.float().cpu().numpy(),
                        "log_prob": log_prob.float().cpu().numpy(),
                    }
                    if history is not None:
                        decision["history"] = history.float().cpu().numpy()
                mode = self.corrected(mode, correction)
            flat = mode * self.delta_std + self.delta_mean
            end = prediction.end_logits
            end = None if end is None else torch.sigmoid(end)
        finally:
            self.train(was_training)
        chunk = flat.float().cpu().numpy().reshape(-1, self.config.chunk, self.config.action_dim)
        if self.config.action_mode == "delta":
            chunk = command_as_action(np.asarray(obs["proprio"]))[:, None, :] + chunk
        end = None if end is None else end.float().cpu().numpy()
        return np.clip(chunk, -1.0, 1.0).astype(np.float32), end, decision

    # --------------------------------------------------------------------------- policy protocol
    def reset(self, batch: int) -> None:
        """Start ``batch`` new episodes: drop the queued actions."""
        self._plan = self._last = None
        self._cursor = 0
        self._steps = 0
        self._ended = np.zeros(batch, bool)
        self._seen = []

    def start_episodes(self, seeds: list[int]) -> None:
        """The explorer's hook at the start of a batch: each episode's noise seed, from which
        practice's residual exploration (if set) draws that episode's corrections."""
        if self.exploration is not None:
            self.exploration.start(seeds)

    def episode_record(self, i: int) -> dict[str, np.ndarray]:
        """The explorer's hook at the end of a batch: episode ``i``'s decisions under practice's
        exploration (one row each: ``step``, ``time``, ``features``, ``base``, ``sample``,
        ``log_prob``, and ``history`` if the residual reads one); empty without exploration."""
        return {} if self.exploration is None else self.exploration.episode_record(i)

    @property
    def holding(self) -> np.ndarray:
        """``(B,)`` bool: the episodes whose motion is over (``predict_end``), holding their last
        action; the explorer runs them without noise."""
        return self._ended.copy()

    def act(self, obs: dict) -> np.ndarray:
        """Next actions ``(B, 5)``: from the queued chunk, re-planned every ``execute`` steps.

        With ``predict_end``, an episode whose re-plan predicts that the demonstration ends within
        the chunk has done its skill: it holds its last action from then on (and once every
        episode has, the network is no longer called)."""
        b = len(obs["proprio"])
        cfg = self.config
        if len(self._ended) != b:
            self.reset(b)
        if self._last is None:
            self._last = command_as_action(np.asarray(obs["proprio"], np.float32))
        history = self._remember(obs)
        if self._ended.all():
            return self._last.copy()
        end = None
        if self._plan is None or self._cursor >= cfg.execute:
            # The explorer steps every episode in lockstep, so all queues empty together: one
            # network call re-plans the whole batch.
            explore = self.exploration if self.residual is not None else None
            inputs = self._timed(obs, b)
            if history is not None:
                inputs["proprio_history"] = history
            if explore is None:
                (chunk, end), decision = self.predict(inputs), None
            else:
                chunk, end, decision = self._predict(inputs, explore)
            self._plan = chunk[:, : cfg.execute]
            self._cursor = 0
            if end is not None:
                self._ended |= end.max(-1) > cfg.end_threshold
            if decision is not None:  # the decisions whose correction moves the spatula
                explore.record(self._steps, self._steps / cfg.control_hz, decision, ~self._ended)
        action = self._plan[:, self._cursor]
        self._cursor += 1
        action = np.where(self._ended[:, None], self._last, action)
        self._steps += 1
        self._last = np.asarray(action, np.float32)
        return self._last.copy()

    def _timed(self, obs: dict, b: int) -> dict:
        """``obs`` with the episode time this policy has counted, unless it brings its own."""
        if self.config.use_time and "time" not in obs:
            return {**obs, "time": np.full(b, self._steps / self.config.control_hz, np.float32)}
        return dict(obs)

    def _remember(self, obs: dict) -> np.ndarray | None:
        """The residual's ``proprio_history`` before this step's observation (the episode's first
        observation repeated where it is younger than the history), then this observation kept."""
        k = self.config.residual_history if self.residual is not None else 0
        if not k:
            return None
        proprio = np.asarray(obs["proprio"], np.float32)
        if not self._seen:
            self._seen = [proprio]
            return np.stack([proprio] * k, axis=1)
        history = np.stack([self._seen[0]] * (k - len(self._seen)) + self._seen, axis=1)
        self._seen = [*self._seen, proprio][-k:]
        return history

    # ------------------------------------------------------------------------------ checkpoints
    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """Write ``config.json`` and ``model.safetensors`` (trainable weights and normalisation;
        not the sentence encoder) to ``directory``, each replaced atomically."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        meta = {
            "format_version": FORMAT_VERSION,
            "class": type(self).__name__,
            "config": self.config.to_dict(),
        }
        # Weights first: a config.json always sits beside weights at least as new as itself.
        with file_aside(directory / WEIGHTS_NAME) as tmp:
            save_file(tensors, str(tmp), metadata={"format_version": str(FORMAT_VERSION)})
        write_text_atomic(directory / CONFIG_NAME, json.dumps(meta, indent=2, sort_keys=True) + "\n")

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike, device: str | torch.device = "cpu") -> VLAPolicy:
        """The policy saved in ``directory`` by :meth:`save_pretrained`, in eval mode on ``device``.

        Raises:
            PolicyConfigError: the checkpoint is missing, unreadable or does not match its config.
        """
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        directory = Path(directory)

        def fail(problem: str) -> PolicyConfigError:
            return PolicyConfigError(f"policy checkpoint {directory}: {problem}")

        if not directory.is_dir():
            raise fail("no such directory")
        for name in (CONFIG_NAME, WEIGHTS_NAME):
            if not (directory / name).is_file():
                raise fail(f"{name} is missing")
        try:
            meta = json.loads((directory / CONFIG_NAME).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise fail(f"{CONFIG_NAME} does not parse: {_first_line(e)}") from None
        if not isinstance(meta, dict) or "config" not in meta:
            raise fail(f"{CONFIG_NAME} has no 'config' entry")
        if meta.get("format_version") != FORMAT_VERSION:
            raise fail(f"format version {meta.get('format_version')!r}, this code reads {FORMAT_VERSION}")
        if meta.get("class") != cls.__name__:
            raise fail(f"holds a {meta.get('class')!r}, not a {cls.__name__}")
        try:
            policy = cls(PolicyConfig.from_dict(meta["config"]))
        except PolicyConfigError as e:
            raise fail(str(e)) from None
        try:
            tensors = load_file(str(directory / WEIGHTS_NAME), device="cpu")
        except (SafetensorError, OSError, RuntimeError) as e:
            raise fail(f"{WEIGHTS_NAME} does not load: {_first_line(e)}") from None
        expected = policy.state_dict()
        missing = sorted(set(expected) - set(tensors))
        unexpected = sorted(set(tensors) - set(expected))
        mismatched = [
            f"{k} {tuple(tensors[k].shape)} vs {tuple(v.shape)}"
            for k, v in expected.items()
            if k in tensors and tensors[k].shape != v.shape
        ]
        problems = []
        if mismatched:
            problems.append(
                f"{len(mismatched)} tensor shape(s) differ from config.json (e.g. {mismatched[0]})"
            )
        if missing:
            problems.append(f"{len(missing)} tensor(s) missing (e.g. {missing[0]})")
        if unexpected:
            problems.append(f"{len(unexpected)} unexpected tensor(s) (e.g. {unexpected[0]})")
        if problems:
            raise fail("; ".join(problems))
        try:
            policy.load_state_dict(tensors, strict=True)
        except RuntimeError as e:
            raise fail(f"weights do not load: {_first_line(e)}") from None
        return policy.to(device).eval()
