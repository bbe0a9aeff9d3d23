"""Closed-loop episodes: a policy (plus exploration noise) steps many envs in lockstep.

One call runs a fixed group of episodes: one env each, one batched ``policy.act`` per control
step for the whole group. The group's composition (not the worker that runs it) is all that the
results depend on: an episode's noise comes from its own seed, episodes that have ended stay in
the batch with their last observation (their actions are ignored), and torch runs on one thread.

Exploration noise perturbs the executed motion around the policy's own, it does not steer it: the
policy is shown the command it chose (not the noisy one the env executed) as its previous command,
and an episode the policy holds (``holding``: its motion is over) runs without noise. A policy
that predicts changes of the previous command would otherwise integrate the noise into its path
(a random walk that pink noise at 0.01 already turns into a lost egg), and noise on a held blade
shakes an egg that should come to rest. The trajectories record what was executed.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from robo_coevolve.action_space import with_command
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.noise import NoiseSpec
from robo_coevolve.scoring import Thresholds
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


@runtime_checkable
class Policy(Protocol):
    """What the explorer runs closed loop: a *batch* of observations (a dict of stacked arrays,
    plus ``instruction``: a list of strings) to a batch of normalised actions ``(B, 5)`` in [-1, 1].
    Batching is the point: a worker steps many episodes in lockstep and asks the policy once per
    step for all of them. ``reset(batch)`` starts a new batch of episodes (for policies with
    memory, e.g. action chunks). ``privileged`` and ``image_size`` tell the explorer which
    observations to build. A policy may also expose ``holding``, ``(B,)`` bool: the episodes whose
    motion it considers over (it holds its last command there), run without exploration noise;
    ``start_episodes(seeds)``, called after ``reset`` with each episode's noise seed (a policy
    that explores by itself draws from them); and ``episode_record(i) -> dict`` of arrays with
    one row per decision and a ``step`` column (when it was taken), returned in the trajectory's
    ``meta["decisions"]`` without the rows past the episode's end."""

    privileged: bool
    image_size: int | None

    def reset(self, batch: int) -> None: ...

    def act(self, obs: dict) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class PolicyEpisode:
    """One closed-loop episode: a concrete task (its ``seed`` is the reset seed) and the noise
    added to the policy's actions, drawn from ``noise_seed``."""

    task: TaskSpec
    noise: NoiseSpec | None = None
    noise_seed: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def policy_episodes(
    tasks: TaskDistribution, n: int, noise: NoiseSpec | None, rng: np.random.Generator, **meta: Any
) -> list[PolicyEpisode]:
    """``n`` episodes on tasks drawn from ``tasks``, each with its own noise seed from ``rng``."""
    drawn = tasks.sample_many(rng, n)
    seeds = rng.integers(2**31 - 1, size=n)
    return [PolicyEpisode(t, noise, int(s), dict(meta)) for t, s in zip(drawn, seeds, strict=True)]


@contextlib.contextmanager
def single_thread_torch():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _stack(observations: list[dict]) -> dict:
    batch = {k: np.stack([o[k] for o in observations]) for k in observations[0] if k != "instruction"}
    batch["instruction"] = [o["instruction"] for o in observations]
    return batch


def run_policy_episodes(
    policy: Policy,
    episodes: list[PolicyEpisode],
    control_hz: float = 50.0,
    thresholds: Thresholds | dict | None = None,
) -> list[Trajectory]:
    """Run ``episodes`` with ``policy`` in lockstep; one Trajectory each, in order."""
    envs = [
        EggFlipEnv(
            task=ep.task,
            control_hz=control_hz,
            privileged=policy.privileged,
            image_size=policy.image_size,
            thresholds=thresholds,
            instruction="text",  # the policy reads the instruction's text (its language encoder)
        )
        for ep in episodes
    ]
    try:
        obs = [env.reset(seed=ep.task.seed)[0] for env, ep in zip(envs, episodes, strict=True)]
        initial = [env.initial_state.copy() for env in envs]
        noise = [
            (ep.noise.sample(np.random.default_rng(ep.noise_seed), env.horizon_steps) if ep.noise else None)
            for env, ep in zip(envs, episodes, strict=True)
        ]
        proprio = [[o["proprio"]] for o in obs]
        shown = list(obs)  # what the policy reads: each obs with the command the policy chose
        actions: list[list[np.ndarray]] = [[] for _ in episodes]
        live = [True] * len(episodes)
        with single_thread_torch():
            policy.reset(len(episodes))
            if hasattr(policy, "start_episodes"):
                policy.start_episodes([ep.noise_seed for ep in episodes])
            t = 0
            while any(live):
                batch = np.asarray(policy.act(_stack(shown)), dtype=np.float64).reshape(len(episodes), 5)
                holding = getattr(policy, "holding", None)
                for i, env in enumerate(envs):
                    if not live[i]:
                        continue
                    chosen = np.clip(np.nan_to_num(batch[i]), -1.0, 1.0)
                    noisy = noise[i] is not None and not (holding is not None and holding[i])
                    a = np.clip(chosen + noise[i][t], -1.0, 1.0) if noisy else chosen
                    a = a.astype(np.float32)
                    obs[i], _, terminated, truncated, _ = env.step(a)
                    shown[i] = (
                        obs[i]
                        if noise[i] is None
                        else {**obs[i], "proprio": with_command(obs[i]["proprio"], chosen)}
                    )
                    proprio[i].append(obs[i]["proprio"])
                    actions[i].append(a)
                    live[i] = not (terminated or truncated)
                t += 1
        trajectories = []
        for i, (env, ep) in enumerate(zip(envs, episodes, strict=True)):
            meta = {
                "plan": "policy",
                "policy": type(policy).__name__,
                "noise": None
                if ep.noise is None
                else {"kind": ep.noise.kind, "temperature": ep.noise.temperature, "seed": ep.noise_seed},
                **ep.meta,
            }
            record = policy.episode_record(i) if hasattr(policy, "episode_record") else {}
            if record:
                within = np.asarray(record["step"]) < len(actions[i])
                meta["decisions"] = {k: np.asarray(v)[within] for k, v in record.items()}
            trajectories.append(
                Trajectory.from_env(env, initial[i], actions[i], proprio[i], ep.task.seed, meta)
            )
        return trajectories
    finally:
        for env in envs:
            env.close()
