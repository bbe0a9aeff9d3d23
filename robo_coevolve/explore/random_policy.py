"""The random-init baseline of policy exploration: a randomly initialised MLP policy."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from robo_coevolve.action_space import command_as_action


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
