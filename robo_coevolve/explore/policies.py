"""The policy interface the explorer runs closed loop, and the random-init baseline policy.

A policy maps a *batch* of observations (a dict of stacked arrays, plus ``instruction``: a list of
strings) to a batch of normalised actions ``(B, 5)`` in [-1, 1]. Batching is the point: a worker
steps many episodes in lockstep and asks the policy once per step for all of them.
``reset(batch)`` starts a new batch of episodes (for policies with memory, e.g. action chunks).
``privileged`` and ``image_size`` tell the explorer which observations to build. A policy may
also expose ``holding``, ``(B,)`` bool: the episodes whose motion it considers over (it holds its
last command there), which the explorer then runs without exploration noise.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from robo_coevolve.task_spec import SPATULA_HIGH, SPATULA_LOW

_LOW = np.array(SPATULA_LOW)
_HIGH = np.array(SPATULA_HIGH)


@runtime_checkable
class Policy(Protocol):
    privileged: bool
    image_size: int | None

    def reset(self, batch: int) -> None: ...

    def act(self, obs: dict) -> np.ndarray: ...


def command_as_action(proprio: np.ndarray) -> np.ndarray:
    """The previous command held in ``proprio`` (..., 15) as a normalised action (..., 5)."""
    command = np.asarray(proprio, np.float64)[..., 10:15]
    return (2.0 * (command - _LOW) / (_HIGH - _LOW) - 1.0).astype(np.float32)


def with_command(proprio: np.ndarray, action: np.ndarray) -> np.ndarray:
    """``proprio`` (..., 15) with its previous command replaced by the normalised ``action`` (..., 5)
    (the inverse of :func:`command_as_action`)."""
    out = np.array(proprio, np.float64)
    out[..., 10:15] = _LOW + (np.asarray(action, np.float64) + 1.0) / 2.0 * (_HIGH - _LOW)
    return out.astype(np.float32)


class RandomMLPPolicy(nn.Module):
    """A randomly initialised MLP from proprioception (and the egg state when ``privileged``) to a
    bounded change of the previous command: the random-init baseline of policy exploration.

    Args:
        hidden: width of the two hidden layers.
        max_delta: largest change of the normalised command per step.
        privileged: also read the egg state.
        seed: torch seed of the initial weights.
    """

    image_size = None

    def __init__(self, hidden: int = 64, max_delta: float = 0.05, privileged: bool = True, seed: int = 0):
        super().__init__()
        self.privileged = privileged
        self.max_delta = max_delta
        inputs = 15 + (13 if privileged else 0)
        generator = torch.Generator().manual_seed(seed)
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.head = nn.Linear(hidden, 5)
        for p in self.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=generator) * (1.0 / np.sqrt(max(p.shape[-1], 1))))

    def reset(self, batch: int) -> None:
        pass

    @torch.no_grad()
    def act(self, obs: dict) -> np.ndarray:
        features = [np.asarray(obs["proprio"], np.float32)]
        if self.privileged:
            features.append(np.asarray(obs["egg"], np.float32))
        x = torch.from_numpy(np.concatenate(features, axis=-1))
        delta = self.max_delta * torch.tanh(self.head(self.net(x))).numpy()
        return np.clip(command_as_action(obs["proprio"]) + delta, -1.0, 1.0)
