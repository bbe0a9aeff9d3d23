"""The action head: a mixture of diagonal Gaussians over a whole flattened action chunk.

A mixture keeps distinct ways of doing a task apart (slide under the egg from the left or from the
right); a regression head would average them into a motion that does neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

_LOG_2PI = math.log(2.0 * math.pi)


@dataclass
class GaussianMixture:
    """A batch of mixtures: ``logits (B, K)``, ``means (B, K, D)``, ``log_stds (B, K, D)``."""

    logits: torch.Tensor
    means: torch.Tensor
    log_stds: torch.Tensor

    def log_prob(self, target: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Log density ``(B,)`` of ``target (B, D)``; dims where ``mask`` is 0 are marginalised out."""
        target = target.unsqueeze(1)
        z = (target - self.means) * torch.exp(-self.log_stds)
        per_dim = -0.5 * z.square() - self.log_stds - 0.5 * _LOG_2PI
        if mask is not None:
            # where(), not a product: a padded target may be NaN or huge, and 0 * inf is NaN.
            per_dim = torch.where(mask.unsqueeze(1).bool(), per_dim, torch.zeros_like(per_dim))
        return torch.logsumexp(F.log_softmax(self.logits, dim=-1) + per_dim.sum(-1), dim=-1)

    def nll(self, target: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Negative log likelihood of ``target (B, D)``, masked dims ignored, mean over the batch."""
        return -self.log_prob(target, mask).mean()

    def mode(self) -> torch.Tensor:
        """Mean ``(B, D)`` of each mixture's most probable component: one mode, never a blend."""
        best = self.logits.argmax(dim=-1)
        return self.means[torch.arange(len(best), device=best.device), best]

    def sample(self, generator: torch.Generator | None = None) -> torch.Tensor:
        """One draw ``(B, D)`` per mixture."""
        probs = torch.softmax(self.logits, dim=-1)
        k = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        rows = torch.arange(len(k), device=k.device)
        noise = torch.randn(
            self.means.shape[0], self.means.shape[2], generator=generator, device=self.means.device
        )
        return self.means[rows, k] + self.log_stds[rows, k].exp() * noise


class GMMChunkHead(nn.Module):
    """Features ``(B, hidden)`` to a :class:`GaussianMixture` over ``dim`` values.

    Args:
        hidden: input width.
        dim: size of the flattened chunk (chunk * action_dim).
        components: Gaussians in the mixture.
        min_std: floor of every standard deviation, so the likelihood cannot collapse onto a point.
    """

    def __init__(self, hidden: int, dim: int, components: int, min_std: float = 1e-3):
        super().__init__()
        self.dim, self.components, self.min_std = dim, components, min_std
        self.logits = nn.Linear(hidden, components)
        self.means = nn.Linear(hidden, components * dim)
        self.stds = nn.Linear(hidden, components * dim)
        with torch.no_grad():
            # Components start at distinct places (targets are normalised to unit scale), so they
            # split the modes between them instead of moving as one.
            self.means.bias.copy_(torch.randn(components * dim))
            self.logits.bias.zero_()

    def forward(self, features: torch.Tensor) -> GaussianMixture:
        b = features.shape[0]
        means = self.means(features).view(b, self.components, self.dim)
        stds = self.min_std + F.softplus(self.stds(features).view(b, self.components, self.dim))
        return GaussianMixture(self.logits(features), means, torch.log(stds))
