"""Co-evolution in the loop: each node's task pool, grown by a synthesis round every iteration,
drawn from for exploration, fed every trial's outcome, and saved with the run."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from robo_coevolve.coevolve import TaskPool
from robo_coevolve.evolve.config import CoEvolveConfig
from robo_coevolve.evolve.run_state import POOLS, pool_name
from robo_coevolve.explore.search import trial_score
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillNode

log = logging.getLogger(__name__)


class TaskPools:
    """The run's task pools (node name -> ``TaskPool``) under ``coevolve``; with it off, no node
    has one and exploration draws from the node's own distribution."""

    def __init__(self, coevolve: CoEvolveConfig, output_dir: str | Path):
        self.coevolve = coevolve
        self.output_dir = Path(output_dir)
        self.pools: dict[str, TaskPool] = {}

    def restore(self, paths: dict[str, str]) -> None:
        """Take the pools saved at ``paths`` (node -> path relative to the run directory), on resume."""
        self.pools = {name: TaskPool.load(self.output_dir / path) for name, path in paths.items()}

    def of(self, node: SkillNode) -> TaskPool | None:
        """The node's task pool (made from its own distribution on first use); None when off."""
        if not self.coevolve.enabled:
            return None
        if node.name not in self.pools:
            self.pools[node.name] = TaskPool.seeded(node.distribution())
        return self.pools[node.name]

    def sizes(self) -> dict[str, int]:
        return {name: len(pool) for name, pool in self.pools.items()}

    def synthesize(
        self, node: SkillNode, info: dict, policy: VLAPolicy | None, backend, rng: np.random.Generator, k: int
    ):
        """One synthesis round on the node's pool once its first search found modes (``info``,
        the node's run state, gains modes and maybe a new answer); ``policy``, the one trained on
        the node (None: none yet), is what an adversary attacks. Returns (report, the successes
        of its solvability trials, the successes of the demonstrations of an answer adopted this
        round); (None, [], []) when off or before that."""
        pool = self.of(node)
        if pool is None or info["modes"] is None:
            return None, [], []
        synth, adversary = self.coevolve.synthesizer, self.coevolve.adversary
        promoted = synth.promote(pool, info["modes"], k - 1)
        if promoted:  # a variant's own motion becomes one of the node's modes (state, below)
            info["modes"] = [*info["modes"], *promoted]
            log.info(
                "iteration %d: %s +%d modes from its variants' own searches", k, node.name, len(promoted)
            )
        attack = None
        if adversary is not None and policy is not None:
            attack = adversary.search(policy, pool, synth.space, backend, rng)
        report, successes = synth.evolve(
            pool,
            info["modes"],
            backend,
            rng,
            k,
            adversarial=None if attack is None else attack.candidates,
        )
        report.promoted = len(promoted)
        if attack is not None:
            report.adversary = attack.to_dict()
            report.validation_trials += attack.episodes
        shown = []
        if self.coevolve.answer is not None:
            found = self.coevolve.answer.run(
                pool, node.distribution(), np.asarray(info["best_params"]), backend, rng
            )
            if found is not None:
                report.answer = found.to_dict()
                report.validation_trials += found.trials
                if found.adopted:  # the node's answer from now on, and one more mode
                    info["best_params"] = found.params
                    info["modes"] = [*info["modes"], found.params]
                    shown = found.examples
        log.info(
            "iteration %d: %s task pool %d variants (+%d; %d invalid, %d set aside, %d validation trials)",
            k,
            node.name,
            len(pool),
            report.admitted,
            report.invalid_spec + report.invalid_physics,
            report.set_aside,
            report.validation_trials,
        )
        return report, successes, shown

    def draw(self, node: SkillNode, rng: np.random.Generator, n: int) -> tuple[list, list[int | None]]:
        """``n`` exploration tasks and the pool entry each came from (None: the node's own
        distribution, co-evolution off)."""
        pool = self.of(node)
        if pool is None:
            return node.distribution().sample_many(rng, n), [None] * n
        return pool.sample(rng, n)

    def record(
        self,
        node: SkillNode,
        trajs: list,
        entries: list[int | None],
        k: int,
        policy: bool = False,
        modes: list[int] | None = None,
        params: np.ndarray | None = None,
    ) -> None:
        """Count trials on their pool entries: ``policy`` episodes, or primitives around ``modes``
        with their ``params`` (the variants' own searches keep the best)."""
        pool = self.of(node)
        if pool is None:
            return
        space = self.coevolve.synthesizer.space
        for j, (t, i) in enumerate(zip(trajs, entries, strict=True)):
            mode = None if modes is None else modes[j]
            elite = None if params is None else (trial_score(t.outcome), params[j])
            pool.record(i, t.success, k, space.features(t.task), policy=policy, mode=mode, elite=elite)

    def record_evaluations(self, evaluations: dict, k: int) -> None:
        """Held-out outcomes (node -> evaluation) feed each node's own variant (forgetting shows
        there)."""
        for name, ev in evaluations.items():
            if name in self.pools:
                for t in ev.trajectories:
                    self.pools[name].record(0, t.success, k)

    def save(self, k: int) -> dict[str, str]:
        """Write every pool as of iteration ``k`` (before the commit point); returns the paths."""
        out = {}
        for name, pool in self.pools.items():
            path = pool.save(self.output_dir / POOLS / pool_name(name, k))
            out[name] = str(path.relative_to(self.output_dir))
        return out

    def prune(self, k: int, committed: dict[str, str]) -> None:
        """Once iteration ``k`` is committed (its pool files ``committed``), drop the pool files
        of earlier iterations."""
        folder = self.output_dir / POOLS
        keep = set(committed.values())
        for name in self.pools:
            for j in range(max(0, k - 3), k):
                path = folder / pool_name(name, j)
                if str(path.relative_to(self.output_dir)) not in keep:
                    path.unlink(missing_ok=True)
