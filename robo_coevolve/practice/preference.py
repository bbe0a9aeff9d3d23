"""Practice by preference: direct preference optimisation (DPO) of a cloned policy on its own tries.

The clone runs each task ``samples`` times with correlated exploration noise. A task on which some
tries succeed and some fail gives pairs (chosen = a success, rejected = a failure, both from the
same task and start state); tasks where every try succeeds or every try fails give none, which
keeps the budget's signal on the tasks at the edge of what the policy can do. The trained policy
then minimises ``-log sigmoid(beta * ((lp_w - ref_w) - (lp_l - ref_l)))``, where ``lp`` is a try's
log-likelihood under the policy and ``ref`` under the frozen input clone, optionally plus a
behaviour-cloning anchor (the chosen tries' chunk NLL, ``bc_weight``). The record also says how
far the mixture's mode, which is what runs, lies from the chosen and the rejected tries: a
likelihood margin can grow by pushing the failures away without moving the mode to the successes.

A try's log-likelihood is summed over *every* control step, each step's term the mixture head's
log-density of the executed chunk that follows it (deltas from the command observed there, masked
past the try's end): the samples behaviour cloning trains on (``ChunkDataset``), so the reference
scores them in distribution and the anchor reuses them. Re-plan points alone would drop half the
steps of a two-step re-plan, and a push can land between them. With ``length_normalise`` the sum
becomes a mean: a failure that drops the egg ends early, and a plain sum would tie the preference
to episode length.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import RolloutBackend
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.learn.dataset import ChunkDataset
from robo_coevolve.policy.vla import VLAPolicy
from robo_coevolve.practice.config import PreferenceConfig
from robo_coevolve.refine.core_window import simulate_window
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.trajectory import Trajectory


def preference_pairs(groups: Sequence[Sequence[Trajectory]], cap: int) -> list[tuple[int, int]]:
    """(chosen, rejected) pairs as indices into the groups laid end to end; each group holds the
    tries of one task from one start state, and pairs never cross groups. Per group, at most
    ``cap`` pairs, clearest first: a success's safety margin minus a failure's progress."""
    pairs: list[tuple[int, int]] = []
    offset = 0
    for group in groups:
        wins = [i for i, t in enumerate(group) if t.success]
        losses = [i for i, t in enumerate(group) if not t.success]
        ranked = sorted(
            ((w, lo) for w in wins for lo in losses),
            key=lambda p: group[p[1]].outcome["progress"] - group[p[0]].outcome["margin"],
        )
        pairs += [(offset + w, offset + lo) for w, lo in ranked[:cap]]
        offset += len(group)
    return pairs


def chunk_log_likelihoods(policy: VLAPolicy, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Per sample of a ``ChunkDataset`` batch: the mixture head's log-density ``(B,)`` of the
    normalised target chunk (masked steps marginalised out, as ``VLAPolicy.loss`` does), and the
    squared distance ``(B,)`` of the mixture's mode from it over the valid steps."""
    flat = policy.targets(batch)
    target = (flat - policy.delta_mean) / policy.delta_std
    mask = torch.as_tensor(batch["mask"], device=target.device).repeat_interleave(
        policy.config.action_dim, dim=1
    )
    mixture = policy(batch).mixture
    miss = ((mixture.mode() - target) * mask).square().sum(-1)
    return mixture.log_prob(target, mask), miss


@contextlib.contextmanager
def _torch_threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _Tries:
    """The paired tries' per-step samples and, per try, its rows, to score tries in batches."""

    def __init__(self, trajectories: Sequence[Trajectory], chunk: int, image_size: int | None):
        env = EggFlipEnv(task=trajectories[0].task, control_hz=trajectories[0].control_hz)
        try:  # the tries' observations, re-simulated exactly from their start states and actions
            segments = [simulate_window(env, t, t.initial_state, t.actions, {}) for t in trajectories]
        finally:
            env.close()
        self.data = ChunkDataset.from_segments(segments, chunk, image_size)  # segment by segment
        bounds = np.cumsum([0] + [len(s) for s in segments])
        self.rows = [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def score(self, policy: VLAPolicy, tries: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per try of ``tries`` under ``policy``: its log-likelihood summed over its steps, its
        number of steps, and its mean squared miss of the mode."""
        rows = np.concatenate([self.rows[i] for i in tries])
        owner = torch.as_tensor(np.repeat(np.arange(len(tries)), [len(self.rows[i]) for i in tries]))
        lp, miss = chunk_log_likelihoods(policy, self.data.batch(rows))
        steps = torch.bincount(owner, minlength=len(tries)).to(lp.dtype)
        total = torch.zeros(len(tries), dtype=lp.dtype).index_add(0, owner, lp)
        miss = torch.zeros(len(tries), dtype=lp.dtype).index_add(0, owner, miss.detach()) / steps
        return total, steps, miss


def practise_preference(
    policy: VLAPolicy,
    tasks: list[TaskSpec],
    backend: RolloutBackend,
    config: PreferenceConfig,
    rng: np.random.Generator,
) -> tuple[VLAPolicy, dict]:
    """A copy of ``policy`` trained by DPO on pairs of its own noisy tries of ``tasks`` (concrete
    tasks, each with its reset seed); ``policy`` itself is left as it was. The record holds the
    tries' success, the pairs found, per-step losses, reward margins and accuracy, how far the
    mode lies from the chosen and the rejected tries before and after, and the seconds taken."""
    if not tasks:
        raise ValueError("practise_preference needs at least one task")
    start = time.perf_counter()
    noise, n = config.noise, config.samples
    seeds = rng.integers(2**31 - 1, size=(len(tasks), n))
    episodes = [
        PolicyEpisode(task, noise, int(s), {"practice": "preference"})
        for task, row in zip(tasks, seeds, strict=True)
        for s in row
    ]
    tries = backend.run_policy(policy, episodes)
    groups = [tries[i * n : (i + 1) * n] for i in range(len(tasks))]
    wins = np.array([sum(t.success for t in g) for g in groups])
    pairs = preference_pairs(groups, config.pairs_per_task)
    record: dict = {
        "episodes": len(tries),
        "try_success": float(wins.sum() / len(tries)),
        "tasks_with_pairs": int(np.sum((wins > 0) & (wins < n))),
        "tasks_all_success": int(np.sum(wins == n)),
        "tasks_all_failure": int(np.sum(wins == 0)),
        "pairs": len(pairs),
        "steps": [],
    }
    trained = copy.deepcopy(policy)
    if pairs:
        with _torch_threads(1):
            record.update(_train(trained, tries, pairs, config, rng))
    trained.eval()
    record["seconds"] = time.perf_counter() - start
    return trained, record


def _train(
    trained: VLAPolicy,
    tries: list[Trajectory],
    pairs: list[tuple[int, int]],
    config: PreferenceConfig,
    rng: np.random.Generator,
) -> dict:
    """DPO (and the BC anchor) on ``pairs`` of ``tries``, the reference being ``trained`` as it
    comes in, scored once. Eval mode throughout (no input noise or dropout): a try's
    log-likelihood is a fixed function of the weights, and nothing draws from torch's generator."""
    used = np.unique(np.asarray(pairs).reshape(-1))
    index = {int(t): i for i, t in enumerate(used)}
    pairs_arr = np.array([(index[w], index[lo]) for w, lo in pairs])
    data = _Tries([tries[i] for i in used], trained.config.chunk, trained.image_size)
    trained.eval()
    everything = np.arange(len(used))

    def likelihood(total: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        return total / steps if config.length_normalise else total

    with torch.no_grad():
        total, count, ref_miss = data.score(trained, everything)
        ref_lp = likelihood(total, count)
    params = [p for p in (trained.head if config.head_only else trained).parameters() if p.requires_grad]
    optimiser = torch.optim.Adam(params, lr=config.lr)
    steps = []
    for epoch in range(config.epochs):
        order = rng.permutation(len(pairs_arr))
        for first in range(0, len(order), config.batch_pairs):
            batch = pairs_arr[order[first : first + config.batch_pairs]]
            members, where = np.unique(batch.reshape(-1), return_inverse=True)
            where = torch.as_tensor(where.reshape(batch.shape))
            total, count, _ = data.score(trained, members)
            ratio = likelihood(total, count) - ref_lp[members]
            margin = config.beta * (ratio[where[:, 0]] - ratio[where[:, 1]])
            dpo = -F.logsigmoid(margin).mean()
            chosen = torch.unique(where[:, 0])
            anchor = -(total[chosen] / count[chosen]).mean()  # per-step NLL, as cloning's loss
            loss = dpo + config.bc_weight * anchor
            optimiser.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
            optimiser.step()
            steps.append(
                {
                    "epoch": epoch,
                    "loss": float(loss.detach()),
                    "dpo_loss": float(dpo.detach()),
                    "bc_nll": float(anchor.detach()),
                    "reward_margin": float(margin.detach().mean()),
                    "reward_accuracy": float((margin.detach() > 0).float().mean()),
                }
            )
    with torch.no_grad():
        total, count, miss = data.score(trained, everything)
        lp = likelihood(total, count)
    w, lo = pairs_arr[:, 0], pairs_arr[:, 1]
    return {
        "steps": steps,
        "tries_scored": len(used),
        "samples": len(data.data),
        "final_margin": float(config.beta * ((lp - ref_lp)[w] - (lp - ref_lp)[lo]).mean()),
        # The mode's mean squared miss of the chosen and the rejected tries' chunks, before and
        # after: what runs should come nearer the successes, not just leave the failures.
        "mode_miss": {
            "chosen": [float(ref_miss[w].mean()), float(miss[w].mean())],
            "rejected": [float(ref_miss[lo].mean()), float(miss[lo].mean())],
        },
    }
