"""Residual PPO: the selected clone practises closed loop and a residual head on its frozen base
learns from the physics scorer's dense reward (CleanRL's PPO, on a residual as in ResiP).

Top to bottom, each update:

1. rollout: ``episodes_per_update`` episodes through the backend, the residual's output drawn
   from a Gaussian (a learnable log std, kept here, not in the checkpoint) per decision, from a
   generator seeded by each episode's noise seed; each trajectory brings back what every decision
   saw (the base's features and chunk), drew and its log-probability;
2. returns: the physics scorer's reward (``progress_rewards``: each step's gain in the skill's
   graded progress, plus ``success_bonus`` at the end of a success); a decision's reward is the
   sum of its executed steps' (the last one's runs to the episode's end); GAE over the decisions
   with a value MLP on the same features and the time;
3. update: ``epochs`` passes of minibatches, clipped ratio, normalised advantages, value loss,
   optionally a KL anchor to the base (the zero residual); the first ``value_warmup`` updates fit
   the value only.

The base never runs here: its features are recorded inputs. Everything is drawn from ``rng``
and torch runs on one thread, so the same inputs give the same weights.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.policy.residual import ResidualExploration, gaussian_log_prob
from robo_coevolve.practice.config import RLConfig
from robo_coevolve.scoring import Scorer
from robo_coevolve.scoring.progress import progress_over_time
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


class ValueNet(nn.Module):
    """The critic: the base's features and the episode time to the expected return."""

    def __init__(self, features: int, hidden: int = 128):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features + 1, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, features: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([features, time.unsqueeze(-1)], dim=-1)).squeeze(-1)


def progress_rewards(traj: Trajectory, success_bonus: float, scorer: Scorer | None = None) -> np.ndarray:
    """Each step's reward: the gain in the skill's graded progress (``scoring.progress``: held,
    lifted, turned over, resting ... and the egg's integrity), so the return is the progress the
    episode reached, plus ``success_bonus`` on its last step when it succeeded. Unlike the env's
    potential-based shaping, whose return telescopes to the sparse success, an episode that got
    further scores more even when every episode fails."""
    scorer = scorer or Scorer(1.0 / traj.control_hz)
    events = traj.events(scorer.thresholds)
    potentials = progress_over_time(traj.task.skill, events, scorer.hold_steps, scorer.thresholds)
    rewards = np.diff(potentials, prepend=0.0)
    rewards[-1] += success_bonus * float(traj.success)
    return rewards


def decision_rewards(steps: np.ndarray, rewards: np.ndarray) -> np.ndarray:
    """Each decision's reward: the sum of the step rewards from its step to the next decision's
    (the last decision's to the episode's end)."""
    edges = np.append(steps, len(rewards))
    return np.array([rewards[a:b].sum() for a, b in zip(edges[:-1], edges[1:], strict=True)])


def gae(rewards: np.ndarray, values: np.ndarray, gamma: float, lam: float) -> np.ndarray:
    """Generalised advantage estimates of one episode's decisions; the episode ends after the last."""
    advantages = np.zeros(len(rewards))
    last = 0.0
    for t in reversed(range(len(rewards))):
        next_value = values[t + 1] if t + 1 < len(rewards) else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * last
        advantages[t] = last
    return advantages


def _batch(
    trajectories: list[Trajectory], value: ValueNet, config: RLConfig, scorer: Scorer
) -> dict[str, torch.Tensor] | None:
    """Every decision of ``trajectories`` with its advantage and return, as tensors (None: none)."""
    keys = ("features", "base", "time", "sample", "log_prob", "history")  # history: if the residual reads one
    parts: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    advantages, returns = [], []
    for traj in trajectories:
        d = traj.meta.get("decisions")
        if not d:  # the policy held from its first decision: nothing it chose moved the spatula
            continue
        for k in parts:
            if k in d:
                parts[k].append(np.asarray(d[k], np.float32))
        with torch.no_grad():
            values = value(torch.as_tensor(parts["features"][-1]), torch.as_tensor(parts["time"][-1])).numpy()
        rewards = decision_rewards(
            np.asarray(d["step"]), progress_rewards(traj, config.success_bonus, scorer)
        )
        adv = gae(rewards, values.astype(np.float64), config.gamma, config.gae_lambda)
        advantages.append(adv)
        returns.append(adv + values)
    if not advantages:
        return None
    batch = {k: torch.as_tensor(np.concatenate(v)) for k, v in parts.items() if v}
    batch["advantages"] = torch.as_tensor(np.concatenate(advantages), dtype=torch.float32)
    batch["returns"] = torch.as_tensor(np.concatenate(returns), dtype=torch.float32)
    return batch


def _update(
    policy: VLAPolicy,
    value: ValueNet,
    log_std: nn.Parameter,
    optimizer: torch.optim.Optimizer,
    batch: dict[str, torch.Tensor],
    config: RLConfig,
    rng: np.random.Generator,
    value_only: bool,
) -> dict[str, float]:
    """``config.epochs`` passes of minibatches over ``batch``; the last pass's mean statistics."""
    n = len(batch["sample"])
    params = [*policy.residual.parameters(), log_std, *value.parameters()]
    for _ in range(config.epochs):
        stats: dict[str, list[float]] = {"kl": [], "clip_fraction": [], "value_loss": [], "policy_loss": []}
        order = rng.permutation(n)
        for start in range(0, n, config.minibatch):
            mb = {k: v[order[start : start + config.minibatch]] for k, v in batch.items()}
            v_loss = 0.5 * (value(mb["features"], mb["time"]) - mb["returns"]).square().mean()
            mean = policy.residual(mb["features"], mb["base"], mb.get("history"))
            log_ratio = gaussian_log_prob(mb["sample"], mean, log_std) - mb["log_prob"]
            ratio = log_ratio.exp()
            adv = mb["advantages"]
            adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
            pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - config.clip, 1 + config.clip)).mean()
            loss = config.value_coef * v_loss
            if not value_only:
                loss = loss + pg_loss
                if config.anchor > 0.0:  # KL(N(mean, std) || N(0, std)): the distance to the base
                    loss = loss + config.anchor * (0.5 * (mean * torch.exp(-log_std)).square().sum(-1)).mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            with torch.no_grad():
                stats["kl"].append(float(((ratio - 1) - log_ratio).mean()))
                stats["clip_fraction"].append(float(((ratio - 1).abs() > config.clip).float().mean()))
                stats["value_loss"].append(float(v_loss))
                stats["policy_loss"].append(float(pg_loss))
    return {k: float(np.mean(v)) for k, v in stats.items()}


def practise_rl(
    policy: VLAPolicy,
    tasks: Sequence[TaskSpec],
    backend,
    config: RLConfig,
    rng: np.random.Generator,
) -> tuple[VLAPolicy, dict[str, Any]]:
    """A copy of ``policy`` whose residual (fresh with ``config.residual_scale`` unless it has one)
    practised one episode on each of ``tasks``, ``config.episodes_per_update`` per update.
    Returns it and the record: per update the success and mean progress of its episodes, the KL
    and clip fraction of its last epoch, the exploration std and seconds. The rewards are scored
    as the backend scores its episodes (its control rate and thresholds)."""
    start = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(rng.integers(2**31)))
            practised = copy.deepcopy(policy).eval()
            practised.exploration = None
            if practised.residual is None:
                practised.with_residual(config.residual_scale, config.history)
            value = ValueNet(practised.config.hidden)
        log_std = nn.Parameter(torch.full((practised.executed_dim,), float(config.init_log_std)))
        optimizer = torch.optim.Adam(
            [*practised.residual.parameters(), log_std, *value.parameters()], lr=config.lr, eps=1e-5
        )
        control_hz = getattr(backend, "control_hz", practised.config.control_hz)
        scorer = Scorer(1.0 / control_hz, getattr(backend, "thresholds", None))
        history = []
        for u, first in enumerate(range(0, len(tasks), config.episodes_per_update)):
            t0 = time.perf_counter()
            episodes = [
                PolicyEpisode(task, noise_seed=int(rng.integers(2**31 - 1)))
                for task in tasks[first : first + config.episodes_per_update]
            ]
            practised.exploration = ResidualExploration(log_std.detach().numpy().copy())
            try:
                trajectories = backend.run_policy(practised, episodes)
            finally:
                practised.exploration = None
            batch = _batch(trajectories, value, config, scorer)
            value_only = u < config.value_warmup
            stats = (
                {}
                if batch is None
                else _update(practised, value, log_std, optimizer, batch, config, rng, value_only)
            )
            history.append(
                {
                    "update": u,
                    "episodes": len(episodes),
                    "decisions": 0 if batch is None else len(batch["sample"]),
                    "success": float(np.mean([t.success for t in trajectories])),
                    "progress": float(np.mean([t.outcome["progress"] for t in trajectories])),
                    **stats,
                    "std": float(log_std.detach().exp().mean()),
                    "value_only": value_only,
                    "seconds": time.perf_counter() - t0,
                }
            )
    finally:
        torch.set_num_threads(threads)
    return practised.eval(), {"updates": history, "seconds": time.perf_counter() - start}
