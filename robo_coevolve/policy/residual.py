"""The residual head: a small learnt correction of the executed steps of a frozen base policy's
chunk (Residual Policy Learning, Silver et al. 2018; ResiP, Ankile et al. 2024, "From Imitation
to Refinement"), and the Gaussian exploration around it that practice samples from.

The head reads the base's fused features and its normalised chunk for the executed steps (both
detached: the base stays what behaviour cloning made it), optionally the normalised
proprioception of the last few control steps (``PolicyConfig.residual_history``), and outputs a
correction of those steps in normalised delta units, which the policy multiplies by
``PolicyConfig.residual_scale``. Its last layer starts at zero, so a fresh residual changes no
action.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class ResidualHead(nn.Module):
    """``(features (B, F), base (B, D)[, history (B, H)]) -> correction (B, D)``, unscaled (the
    policy scales it).

    Args:
        features: width of the base's fused features.
        executed: size of the corrected steps (execute * action_dim).
        hidden: width of the two hidden layers.
        history: size of the flattened proprioception history it also reads (0: none).
    """

    def __init__(self, features: int, executed: int, hidden: int = 64, history: int = 0):
        super().__init__()
        self.history = history
        self.net = nn.Sequential(
            nn.Linear(features + executed + history, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, executed),
        )
        with torch.no_grad():  # a fresh residual changes nothing
            self.net[-1].weight.zero_()
            self.net[-1].bias.zero_()

    def forward(
        self, features: torch.Tensor, base: torch.Tensor, history: torch.Tensor | None = None
    ) -> torch.Tensor:
        inputs = [features.detach(), base.detach()]
        if self.history:
            if history is None:
                raise ValueError(f"this residual reads {self.history} history values: pass history")
            inputs.append(history.detach())
        return self.net(torch.cat(inputs, dim=-1))


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log density ``(B,)`` of ``x (B, D)`` under independent Gaussians ``mean (B, D)``,
    ``log_std (D,)``."""
    z = (x - mean) * torch.exp(-log_std)
    return (-0.5 * z.square() - log_std - _HALF_LOG_2PI).sum(-1)


class ResidualExploration:
    """Gaussian exploration on a residual's output, and the record of every decision taken.

    Each episode of a batch draws from its own generator, seeded by the episode's noise seed
    (:meth:`start`), so what an episode samples depends on that episode alone, not on the batch
    or the worker it runs in. A decision is recorded for an episode while its motion goes on.

    Args:
        log_std: ``(D,)`` log standard deviations of the residual's (unscaled) output.
    """

    def __init__(self, log_std: Sequence[float] | np.ndarray):
        self.log_std = np.asarray(log_std, np.float32).reshape(-1)
        self._rngs: list[np.random.Generator] = []
        self._rows: list[list[dict[str, np.ndarray]]] = []

    def start(self, seeds: Sequence[int]) -> None:
        """A new batch of episodes, one generator per noise seed."""
        self._rngs = [np.random.default_rng(int(s)) for s in seeds]
        self._rows = [[] for _ in seeds]

    def sample(self, mean: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One draw ``(B, D)`` around ``mean`` per episode, and its log-probability ``(B,)``."""
        if len(self._rngs) != len(mean):
            raise RuntimeError(
                f"residual exploration was started for {len(self._rngs)} episodes, the batch has "
                f"{len(mean)}: call start(seeds) with one noise seed per episode"
            )
        noise = np.stack([g.standard_normal(mean.shape[1]) for g in self._rngs]).astype(np.float32)
        log_std = torch.as_tensor(self.log_std, device=mean.device)
        sample = mean + torch.exp(log_std) * torch.as_tensor(noise, device=mean.device)
        return sample, gaussian_log_prob(sample, mean, log_std)

    def record(self, step: int, time: float, decision: dict[str, np.ndarray], used: np.ndarray) -> None:
        """Store row ``i`` of each of ``decision``'s arrays for every episode where ``used[i]``."""
        for i in np.flatnonzero(used):
            self._rows[i].append(
                {"step": np.int64(step), "time": np.float32(time)} | {k: v[i] for k, v in decision.items()}
            )

    def episode_record(self, i: int) -> dict[str, np.ndarray]:
        """Episode ``i``'s decisions: each recorded array stacked, one row per decision."""
        rows = self._rows[i]
        if not rows:
            return {}
        return {k: np.stack([r[k] for r in rows]) for k in rows[0]}
