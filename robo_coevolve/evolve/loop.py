"""EvolutionLoop: from nothing to a chain of mastered skills, one iteration at a time.

Each iteration works on the first active node of the skill tree (with ``Budget.consolidate``, once
every node is mastered, on the first mastered node whose success has since fallen below its bar):

1. **explore**: a skill's first iteration searches motion primitives with mixture CEM, and the
   search's answer, polished on shared tasks (``SearchConfig.polish``, ``explore.search.PolishConfig``),
   then demonstrates the skill on ``SearchConfig.demos`` fresh tasks (if it is
   reliable there, those successes, not the search's noisy ones, are refined; if not, with
   ``CloneConfig.compare_examples``, a clone of each set decides which); later iterations
   split their trials between primitives around the modes found and the policy's own episodes
   with correlated noise (``ExploreSchedule``); with co-evolution on (``CoEvolveConfig``), they
   draw their tasks from the node's task pool, grown first, and an answer adopted there by an
   ``AnswerSearch`` demonstrates on the pool, its successes competing like the first search's;
2. **score** is the simulator's: every trial comes back with its physics verdict;
3. **refine**: the successes' core segments, smoothed, replayed, novelty-gated (``Refiner``);
4. **store**: into the run's ``SkillLibrary``;
5. **train**: behaviour cloning of the policy on the node's latest segments (with
   ``CloneConfig.split_sources``, the primitives' and the policy's own apart, one clone each),
   rehearsing the segments of its ancestors and of every other mastered node
   (a fresh clone every iteration with ``refit``; otherwise a node's first iteration starts a new
   stage and later ones fine-tune), ``candidates`` policies from different seeds (and more
   rounds of them, ``redraws``, while none holds every bar); with
   ``select_episodes``, the best of them closed loop on selection tasks replaces the current
   policy if it does at least as well there (with ``CoEvolveConfig.select_episodes``, also on
   tasks drawn from the node's pool);
6. **evaluate**: closed-loop success of the policy on held-out tasks of the node and of those it
   rehearses
   (forgetting shows there); the tree marks the node mastered at its threshold and unlocks its
   children.

Then the iteration commits: checkpoint, metrics line, videos, plots, and ``state.json`` last. Every
random draw of iteration ``k`` comes from ``SeedSequence([seed, k])`` and the policy is saved and
reloaded bit for bit, so a run killed at any moment and resumed (``run()`` again on the same run
directory) ends exactly as an uninterrupted one would.

When the budget ends, an optional last stage distils the policy into another, e.g. the image
policy (``DistillConfig``, ``evolve.distillation``).
"""

from __future__ import annotations

import copy
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robo_coevolve.coevolve import TaskPool
from robo_coevolve.evolve import plots
from robo_coevolve.evolve.config import Budget, CloneConfig, CoEvolveConfig, VideoConfig
from robo_coevolve.evolve.distillation import distill_run
from robo_coevolve.evolve.run_state import (
    CHECKPOINTS,
    METRICS_FILE,
    POOLS,
    RunState,
    checkpoint_name,
    config_differences,
    pool_name,
    rollback,
)
from robo_coevolve.evolve.schedule import ExploreSchedule
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import PrimitiveSearch, SearchConfig, trial_score
from robo_coevolve.learn import (
    ChunkDataset,
    CloneJob,
    DistillConfig,
    evaluate_policy,
    evaluate_tasks,
    fit_clones,
)
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import MASTERED, SkillNode, SkillTree
from robo_coevolve.task_spec import TaskSpec
from robo_coevolve.video import render_highlights

log = logging.getLogger(__name__)

# Trajectory sources (``Trajectory.meta["source"]``) whose segments are the policy's own behaviour;
# every other segment (the first search's examples, later primitive trials, synthesis checks) was
# a motion primitive's.
POLICY_SOURCES = ("policy", "adversary")


def segment_source(meta: dict[str, Any]) -> str:
    """The teacher of a stored segment (``SkillLibrary.metadata(...)["meta"]``): "policy" or
    "primitives"."""
    return "policy" if meta.get("source", {}).get("source") in POLICY_SOURCES else "primitives"


def pool_key(node: str) -> str:
    """The name a node's pool success goes under in selection records (``select_episodes``)."""
    return f"{node}@pool"


def selection_score(rates: dict[str, float], bars: dict[str, float]) -> tuple[float, float]:
    """How well a policy does on selection tasks (node -> success rate), against each node's
    mastery bar, for comparison as a tuple (higher is better): first minus the total shortfall
    below the bars, then the mean success. The loop's goal is every bar held at once, so a
    policy at scoop 95%, flip 91%, catch 82% beats one at 100%, 95%, 75%, whose mean is higher
    but which has dropped a skill below its bar."""
    shortfall = sum(max(0.0, bars[name] - rate) for name, rate in rates.items())
    return -round(shortfall, 9), float(np.mean(list(rates.values())))


class EvolutionLoop:
    """The loop of the module docstring over ``tree``, writing into ``output_dir``.

    Args:
        tree: the skill tree (its progression is restored on resume).
        policy_config: the policy built at the first training.
        train: behaviour-cloning settings.
        schedule: how later iterations split their trials.
        search: the first iteration's primitive search per node.
        refiner: a ``refine.Refiner``.
        backend: a ``RolloutBackend`` (the loop does not close it).
        output_dir: the run directory.
        seed: the run's seed.
        budget: when to stop.
        refine_successes: most (latest) successes refined per iteration.
        video: per-iteration videos of the node's evaluation (best success and a typical failure).
        config: the resolved run config (stored; a resume with a different one is refused).
        coevolve: task co-evolution (off by default).
        distill: the last stage, once the budget ends: the policy distilled into another, e.g. the
            image policy (``evolve.distillation``; off by default).
    """

    def __init__(
        self,
        tree: SkillTree,
        policy_config: PolicyConfig,
        train: CloneConfig,
        schedule: ExploreSchedule,
        search: SearchConfig,
        refiner,
        backend,
        output_dir: str | Path,
        seed: int = 0,
        budget: Budget = Budget(),
        refine_successes: int = 300,
        video: VideoConfig = VideoConfig(),
        config: dict[str, Any] | None = None,
        coevolve: CoEvolveConfig = CoEvolveConfig(),
        distill: DistillConfig | None = None,
    ):
        if budget.until is not None:
            for name in budget.until:
                tree.node(name)  # KeyError names the known nodes
        if refine_successes < 1:
            raise ValueError(f"refine_successes={refine_successes} must be >= 1")
        self.tree = tree
        self.policy_config = policy_config
        self.train = train
        self.schedule = schedule
        self.search = search
        self.refiner = refiner
        self.backend = backend
        self.output_dir = Path(output_dir)
        self.seed = int(seed)
        self.budget = budget
        self.refine_successes = refine_successes
        self.video = video
        self.config = config or {}
        self.coevolve = coevolve
        self.distill = distill or DistillConfig()
        self.pools: dict[str, TaskPool] = {}
        self.policy: VLAPolicy | None = None
        self.library: SkillLibrary | None = None
        self.state = RunState()

    # -------------------------------------------------------------------------------- the run
    def run(self) -> dict[str, Any]:
        """Run (or resume) until the budget ends; returns the summary also written to
        ``summary.json``."""
        self._start()
        while (reason := self._stop_reason()) is None:
            self.iteration(self.state.iteration + 1)
        summary = self.summary(reason)
        if self.distill.enabled and self.policy is not None:
            summary["distilled"] = self._distill()
        (self.output_dir / "summary.json").write_text(json.dumps(summary, indent=2))
        self._plots()
        return summary

    def _distill(self) -> dict[str, Any]:
        """The last stage (``evolve.distillation``) on every node the policy was evaluated on."""
        nodes = [n for n in self.tree.nodes if self.tree.latest_success(n.name) is not None]
        report = distill_run(
            self.distill,
            self.policy,
            self.state.checkpoint,
            self.library,
            nodes,
            eval_seeds={n.name: self._eval_seed(n) for n in nodes},
            backend=self.backend,
            output_dir=self.output_dir,
        )
        return {
            "student": report["student"]["success"],
            "teacher": report["teacher"]["success"],
            "holds": report["holds"],
            "seconds": report["seconds"],
        }

    def _start(self) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.library = SkillLibrary(self.output_dir / "library")
        saved = RunState.load(self.output_dir)
        if saved is not None:
            differ = config_differences(saved.config, self.config)
            if differ:
                raise ValueError(
                    f"{self.output_dir} holds a run with another config ({', '.join(differ[:5])} differ): "
                    "resume it with its own config (robo-coevolve-tree continue RUN_DIR), or start "
                    "this one in a new directory"
                )
        removed = rollback(self.output_dir, saved, self.library)
        if removed:
            log.info("rolled back an interrupted iteration's segments: %s", removed)
        if saved is None:
            self.state = RunState(
                tree=self.tree.to_dict(),
                nodes={
                    n.name: {"modes": None, "best_params": None, "trials": 0, "iterations": 0}
                    for n in self.tree.nodes
                },
                config=self.config,
            )
            return
        self.state = saved
        self.tree.load_progress(saved.tree)
        self.pools = {name: TaskPool.load(self.output_dir / path) for name, path in saved.pools.items()}
        if saved.checkpoint is not None:
            self.policy = VLAPolicy.from_pretrained(self.output_dir / saved.checkpoint)
        log.info("resuming %s after iteration %d", self.output_dir, saved.iteration)

    def _focus(self) -> SkillNode | None:
        """The node the next iteration works on: the first active one; once ``until`` is mastered,
        with ``budget.past_mastery`` the last node of ``until``, with ``budget.consolidate`` the
        first regressed one (None: done)."""
        b = self.budget
        if b.past_mastery and self.tree.is_mastered(b.until):
            return self.tree.node(b.until[-1])
        if not self.tree.is_mastered(b.until) and self.tree.active:
            return self.tree.active[0]
        if b.consolidate:
            scope = set(b.until) if b.until else None
            for n in self.tree.regressed:
                if scope is None or n.name in scope:
                    return n
        return None

    def _kept(self, node: SkillNode) -> list[SkillNode]:
        """The nodes whose skills training ``node`` must keep (:meth:`SkillTree.kept`: its
        ancestors and every other mastered node; rehearsed, evaluated and in selection)."""
        return self.tree.kept(node.name)

    def _stop_reason(self) -> str | None:
        b = self.budget
        if self._focus() is None:
            return "mastered" if self.tree.is_mastered(b.until) else "no active node"
        if self.state.iteration >= b.iterations:
            return "iterations"
        # elapsed_s sums the committed iterations' times, of this session and of any before a resume
        # (it already counts this session's: adding the session's clock too counted it twice).
        if b.minutes is not None and self.state.elapsed_s >= 60 * b.minutes:
            return "minutes"
        if b.trials is not None and self.state.trials >= b.trials:
            return "trials"
        return None

    # ----------------------------------------------------------------------- one iteration
    def iteration(self, k: int) -> dict[str, Any]:
        """Iteration ``k`` on the node in focus; commits it (see the module docstring)."""
        start = time.perf_counter()
        node = self._focus()
        if node is None:
            raise RuntimeError(f"iteration {k}: no node to work on (the run is over: see run())")
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, k]))
        info = self.state.nodes[node.name]
        log.info("iteration %d: %s", k, node.name)

        # 0. co-evolve the tasks (after the node's first search), then 1-2. explore, scored by physics
        synthesis, made, shown = self._synthesize(node, info, rng, k)
        contenders, explored = self._explore(node, info, rng, k, synthesis)
        sources = {name: made + found for name, found in contenders.items()}
        if shown:  # a newly adopted answer's demonstrations compete with what exploration found
            sources = {"answer": shown, **sources}
        # 3-4. refine, and store (when example sets compete, the winner's, after step 5)
        bank = [m["meta"]["features"] for m in self.library.metadata(node.skill) if "features" in m["meta"]]
        refined = {
            name: self.refiner.refine(
                found[-self.refine_successes :], np.array(bank) if bank else None, iteration=k
            )
            for name, found in sources.items()
        }
        if len(refined) == 1:
            segments, report = next(iter(refined.values()))
            self.library.add(segments)
        # 5-6. train, then evaluate the node and those it keeps (not before the first success)
        fit, evaluations, mastered, selection = None, {}, False, None
        kept = self._kept(node)
        if len(refined) > 1:
            found = {name: segs for name, (segs, _) in refined.items() if segs}
            draw = self._cloner(node, kept, rng, k, found) if found else None
            candidates, sets = draw(0) if draw else ([], [])
            if candidates:
                # The sets compete on the node's own skill: what a clone forgets of the others is
                # the training seed's draw (README), the set is kept for good. The policy kept is
                # the best by the usual score, which counts what it forgot.
                fit, selection = self._select(
                    node,
                    k,
                    candidates,
                    new_stage=not self.tree.history[node.name],
                    own_best=True,
                    draw=draw,
                    sets=sets,
                )
                winner = sets[selection["own_best"]]
            else:
                winner = next(iter(refined))
            segments, report = refined[winner]
            self.library.add(segments)
            if self.train.split_sources:  # the first search's examples are all primitives'
                info["source"] = "primitives"
            explored["examples"] = winner
            if selection is not None:
                selection["example_sets"] = sets
            log.info("iteration %d: %s examples from %s (compared: %s)", k, node.name, winner, sets)
        elif self.library.count(node.skill):
            draw = self._cloner(node, kept, rng, k, self._data_sets(node))
            candidates, sets = draw(0)
            # A node's first training is a new stage: the current policy never learnt it.
            fit, selection = self._select(
                node, k, candidates, not self.tree.history[node.name], draw=draw, sets=sets
            )
            if selection is not None and len(sets) > 1:
                selection["sources"] = sets
            if self.train.split_sources and (selection is None or selection["taken"] is not None):
                info["source"] = sets[0 if selection is None else selection["taken"]]
        if fit is not None:
            for n in [node, *kept]:
                evaluations[n.name] = evaluate_policy(
                    self.policy, n.distribution(), self.backend, n.eval_tasks, seed=self._eval_seed(n)
                )
            for name, ev in evaluations.items():
                if name in self.pools:  # held-out outcomes feed the node's own variant (forgetting)
                    for t in ev.trajectories:
                        self.pools[name].record(0, t.success, k)
            mastered = self.tree.record(node.name, k, evaluations[node.name].success_rate)
            for n in kept:
                self.tree.record(n.name, k, evaluations[n.name].success_rate)
        else:
            log.warning("iteration %d: no %s success survived refining yet; exploring again", k, node.name)

        # commit: checkpoint, videos, metrics, then the state
        checkpoint = self._save_checkpoint(k) if fit is not None else self.state.checkpoint
        videos = self._videos(node, evaluations[node.name].trajectories, k) if evaluations else {}
        info["trials"] += explored["trials"]
        info["iterations"] += 1
        pools = self._save_pools(k)
        self.state.trials += explored["trials"]
        record = {
            "iteration": k,
            "node": node.name,
            "explore": explored,
            "refine": report.summary(),
            "library": {s: self.library.count(s) for s in self.library.skills()},
            "train": None
            if fit is None
            else {
                **{key: fit[key] for key in ("steps", "best_step", "best_val_loss", "seconds")},
                "train_samples": fit["train_samples"],
                "selection": selection,
            },
            "success": {name: ev.success_rate for name, ev in evaluations.items()},
            "failures": {name: ev.reasons for name, ev in evaluations.items()},
            "mastered": mastered,
            "status": dict(self.tree.status),
            "trials_total": self.state.trials,
            "videos": videos,
            "seconds": time.perf_counter() - start,
        }
        with open(self.output_dir / METRICS_FILE, "a") as f:
            f.write(json.dumps(record) + "\n")
        self._tensorboard(record)
        self.state.iteration = k
        self.state.tree = self.tree.to_dict()
        self.state.library = record["library"]
        self.state.checkpoint = checkpoint
        self.state.trained_node = node.name if fit is not None else self.state.trained_node
        self.state.elapsed_s += time.perf_counter() - start
        self.state.pools = pools
        self.state.save(self.output_dir)
        self._prune_pools(k)
        self._plots()
        log.info(
            "iteration %d: %s policy success %s, %d trials (%d successes), library %s, %.0f s%s",
            k,
            node.name,
            {name: f"{ev.success_rate:.0%}" for name, ev in evaluations.items()},
            explored["trials"],
            explored["successes"],
            record["library"],
            record["seconds"],
            " -> mastered" if mastered else "",
        )
        return record

    # ------------------------------------------------------------------ co-evolution
    def _pool(self, node: SkillNode) -> TaskPool | None:
        """The node's task pool (made from its own distribution on first use); None when off."""
        if not self.coevolve.enabled:
            return None
        if node.name not in self.pools:
            self.pools[node.name] = TaskPool.seeded(node.distribution())
        return self.pools[node.name]

    def _synthesize(self, node: SkillNode, info: dict, rng: np.random.Generator, k: int):
        """One synthesis round on the node's pool once its first search found modes: (report,
        the successes of its solvability trials, the successes of the demonstrations of an
        answer adopted this round); (None, [], []) when off or before that."""
        pool = self._pool(node)
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
        if adversary is not None and self.policy is not None and self.state.trained_node == node.name:
            attack = adversary.search(self.policy, pool, synth.space, self.backend, rng)
        report, successes = synth.evolve(
            pool,
            info["modes"],
            self.backend,
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
                pool, node.distribution(), np.asarray(info["best_params"]), self.backend, rng
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

    def _draw(self, node: SkillNode, rng: np.random.Generator, n: int) -> tuple[list, list[int | None]]:
        """``n`` exploration tasks and the pool entry each came from (None: the node's own
        distribution, coevolution off)."""
        pool = self._pool(node)
        if pool is None:
            return node.distribution().sample_many(rng, n), [None] * n
        return pool.sample(rng, n)

    def _record(
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
        pool = self._pool(node)
        if pool is None:
            return
        space = self.coevolve.synthesizer.space
        for j, (t, i) in enumerate(zip(trajs, entries, strict=True)):
            mode = None if modes is None else modes[j]
            elite = None if params is None else (trial_score(t.outcome), params[j])
            pool.record(i, t.success, k, space.features(t.task), policy=policy, mode=mode, elite=elite)

    def _save_pools(self, k: int) -> dict[str, str]:
        """Write every pool as of iteration ``k`` (before the commit point); returns the paths."""
        out = {}
        for name, pool in self.pools.items():
            path = pool.save(self.output_dir / POOLS / pool_name(name, k))
            out[name] = str(path.relative_to(self.output_dir))
        return out

    def _prune_pools(self, k: int) -> None:
        """Once iteration ``k`` is committed, drop the pool files of earlier iterations."""
        folder = self.output_dir / POOLS
        keep = set(self.state.pools.values())
        for name in self.pools:
            for j in range(max(0, k - 3), k):
                path = folder / pool_name(name, j)
                if str(path.relative_to(self.output_dir)) not in keep:
                    path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ exploration
    def _explore(
        self, node: SkillNode, info: dict, rng: np.random.Generator, k: int, synthesis=None
    ) -> tuple[list, dict]:
        meta = {"iteration": k, "node": node.name}
        pool = self._pool(node)
        if info["modes"] is None:
            s = self.search
            search = PrimitiveSearch(
                node.distribution(),
                self.backend,
                seed=int(rng.integers(2**31)),
                population=s.population,
                **(s.cem or {}),
            )
            # A node's pool starts as its own distribution, which is what the search draws from.
            record = (
                None if pool is None else (lambda _, trajs: self._record(node, trajs, [0] * len(trajs), k))
            )
            result = s.run(search, on_generation=record)
            contenders = result.contenders if self.train.compare_examples else {"examples": result.examples}
            if any(contenders.values()):  # else the next iteration searches again, from other seeds
                info["modes"] = [np.asarray(m).tolist() for m in result.modes]
                info["best_params"] = np.asarray(result.best_params).tolist()
            out = {
                "kind": "search",
                "trials": result.trials,
                "successes": len(result.examples),
                "search_success": result.success_rate,
                "demo_success": result.demo_success,
            }
            if len(result.searches) > 1:
                out["searches"] = result.searches
            if result.polish is not None:
                out["polish"] = {k: v for k, v in result.polish.items() if k != "answer"}
            if len(contenders) > 1:
                out["contenders"] = {name: len(found) for name, found in contenders.items()}
            if pool is not None:
                out["coevolve"] = {"pool": len(pool)}
            return contenders, out
        n_primitive, n_policy = self.schedule.split(self.tree.latest_success(node.name))
        validation = 0 if synthesis is None else synthesis.validation_trials
        n_primitive, n_policy = self.schedule.shrink(
            n_primitive, n_policy, self._trials_left(n_primitive + n_policy, validation)
        )
        mode_of = None  # each primitive trial's search mode, when the pool counts them
        if pool is not None:
            # Co-evolution: the primitive/policy split per task variant (ExploreSchedule.primitive_chance),
            # and each variant's primitives around the modes that solve it (PoolEntry.choose_modes).
            drawn, entries = self._draw(node, rng, n_primitive + n_policy)
            grip = [pool.entries[i].policy_success() for i in entries]
            as_primitive = self.schedule.as_primitive(grip, rng) if n_policy else np.ones(len(drawn), bool)
            primitive_tasks = [(t, i) for t, i, p in zip(drawn, entries, as_primitive, strict=True) if p]
            policy_tasks = [(t, i) for t, i, p in zip(drawn, entries, as_primitive, strict=True) if not p]
            mode_of, params = pool.primitive_params(
                [i for _, i in primitive_tasks], info["modes"], rng, self.schedule.primitive_jitter
            )
        else:
            params = self.schedule.primitive_params(info["modes"], n_primitive, rng)
            primitive_tasks = list(zip(*self._draw(node, rng, n_primitive), strict=True))
            policy_tasks = list(zip(*self._draw(node, rng, n_policy), strict=True))
        n_primitive, n_policy = len(primitive_tasks), len(policy_tasks)
        trajs = []
        if n_primitive:
            trials = [
                Trial(t, PrimitivePlan(p), {**meta, "source": "primitive"})
                for (t, _), p in zip(primitive_tasks, params, strict=True)
            ]
            trajs += self.backend.run_trials(trials)
            self._record(node, trajs, [i for _, i in primitive_tasks], k, modes=mode_of, params=params)
        policy_trajs = []
        if n_policy:
            seeds = rng.integers(2**31 - 1, size=n_policy)
            episodes = [
                PolicyEpisode(t, self.schedule.noise(i), int(s), {**meta, "source": "policy"})
                for i, ((t, _), s) in enumerate(zip(policy_tasks, seeds, strict=True))
            ]
            policy_trajs = self.backend.run_policy(self.policy, episodes)
            self._record(node, policy_trajs, [i for _, i in policy_tasks], k, policy=True)
        successes = [t for t in trajs + policy_trajs if t.success]
        out = {
            "kind": "mixed" if n_policy and n_primitive else ("policy" if n_policy else "primitives"),
            "trials": n_primitive + n_policy + validation,
            "successes": len(successes),
            "primitive_trials": n_primitive,
            "primitive_success": float(np.mean([t.success for t in trajs])) if trajs else None,
            "policy_episodes": n_policy,
            "policy_noisy_success": float(np.mean([t.success for t in policy_trajs]))
            if policy_trajs
            else None,
        }
        if pool is not None:
            out["coevolve"] = {
                "pool": len(pool),
                "weights": [round(float(w), 4) for w in pool.weights()],
                **(synthesis.to_dict() if synthesis is not None else {}),
            }
        return {"explored": successes}, out

    def _trials_left(self, planned: int, validation: int) -> int:
        """How many of an iteration's ``planned`` exploration trials it runs after ``validation``
        synthesis trials: those come out of the plan (down to half of it), and with
        ``budget.trials`` no more than what is left of the run's budget."""
        left = max(planned // 2, planned - validation)
        if self.budget.trials is not None:
            left = min(left, max(0, self.budget.trials - self.state.trials - validation))
        return left

    def _data_sets(self, node: SkillNode) -> dict[str, list]:
        """The node's data sets to clone: its latest ``max_segments`` segments, or with
        ``split_sources``, those of each source (:func:`segment_source`) that has at least
        ``min_source_segments`` (every source that has any, when none has that many, or when
        consolidating: a fine-tune of the kept policy, not a fresh clone)."""
        if not self.train.split_sources:
            return {"latest": self.library.segments(node.skill, last=self.train.max_segments)}
        latest = self._latest_by_source(node.skill)
        least = 0 if self._consolidating(node) else self.train.min_source_segments
        enough = {source: idx for source, idx in latest.items() if len(idx) >= least}
        if enough and len(enough) < len(latest):
            log.info(
                "%s: not cloned apart, under train.min_source_segments=%d: %s",
                node.name,
                self.train.min_source_segments,
                {source: len(idx) for source, idx in latest.items() if source not in enough},
            )
            latest = enough
        return {source: self.library.segments(node.skill, indices=latest[source]) for source in latest}

    def _data(self, node: SkillNode) -> list:
        """A kept node's rehearsal data: its latest ``max_segments`` segments, with
        ``split_sources`` from the source its policy was last cloned from."""
        source = self.state.nodes[node.name].get("source") if self.train.split_sources else None
        if source is None:
            return self.library.segments(node.skill, last=self.train.max_segments)
        indices = self._latest_by_source(node.skill).get(source, [])
        return self.library.segments(node.skill, indices=indices)

    def _latest_by_source(self, skill: str) -> dict[str, list[int]]:
        """Indices of the latest ``max_segments`` segments of ``skill`` per source that has any,
        primitives first (selection takes the first of equals)."""
        by_source: dict[str, list[int]] = {"primitives": [], "policy": []}
        for m in self.library.metadata(skill):
            by_source[segment_source(m["meta"])].append(m["index"])
        return {source: idx[-self.train.max_segments :] for source, idx in by_source.items() if idx}

    def _cloner(
        self, node: SkillNode, kept: list[SkillNode], rng: np.random.Generator, k: int, sets: dict[str, list]
    ) -> Callable[[int], tuple[list[tuple[VLAPolicy, dict]], list[str]]]:
        """A function that clones the node's named data ``sets`` (the latest ``max_segments``
        segments of each: from :meth:`_data_sets`, or example sets not stored yet),
        ``train.candidates`` policies each (:meth:`_train`), all rehearsing the same data of the
        ``kept`` nodes (:meth:`_kept`, :meth:`_data`). The data are read once; each call is one
        round (``draw`` 0, then each of ``train.redraws``) and returns its candidates and, for
        each, the name of its set. The logs of each set go under its name when there are
        several."""
        c = self.policy_config if self.policy is None else self.policy.config
        image = c.image_size if c.use_image else None

        def data(segs: list) -> ChunkDataset | None:
            return ChunkDataset.from_segments(segs, c.chunk, image) if segs else None

        earlier = [d for d in (data(self._data(a)) for a in kept if a.skill != node.skill) if d]
        rehearsal = ChunkDataset.concat(earlier) if earlier else None
        share = self._rehearsal_share(node, len(earlier))
        current = {}
        for name, segments in sets.items():
            current[name] = data(segments[-self.train.max_segments :])
            if current[name] is None:
                raise RuntimeError(
                    f"iteration {k}: the library has no {node.skill} segments to train on (the explorer "
                    "found no success the refiner kept): raise explore.budget or loosen refine settings"
                )

        def draw(r: int) -> tuple[list[tuple[VLAPolicy, dict]], list[str]]:
            jobs, names = [], []
            for name, samples in current.items():
                tag = name if len(sets) > 1 else None
                jobs += self._clone_jobs(node, rng, k, samples, rehearsal, share, tag, draw=r)
                names += [name] * self.train.candidates
            return fit_clones(jobs, self.train.workers), names

        return draw

    def _clone_jobs(
        self,
        node: SkillNode,
        rng: np.random.Generator,
        k: int,
        current: ChunkDataset,
        rehearsal: ChunkDataset | None,
        share: float,
        tag: str | None = None,
        draw: int = 0,
    ) -> list[CloneJob]:
        """``train.candidates`` trainings on ``current``, with ``share`` of each batch from
        ``rehearsal``, each from its own seeds (drawn here, in order, so that where they then
        run does not change them; :func:`fit_clones`): fresh clones (``refit``, or the run's
        first training), or copies of the current policy that start a new stage or fine-tune
        (always when consolidating a mastered node, see :class:`Budget`). The training logs go
        under ``tag`` when given, and a redrawn round's (``draw`` > 0) under ``redraw_<draw>``."""
        # consolidating a mastered node fine-tunes the kept policy (Budget), whatever refit says
        consolidating = self.policy is not None and self._consolidating(node)
        new_stage = (self.state.trained_node != node.name or self.train.refit) and not consolidating
        fresh = self.policy is None or (self.train.refit and not consolidating)
        jobs = []
        for i in range(self.train.candidates):
            torch.manual_seed(int(rng.integers(2**31)))
            policy = VLAPolicy(self.policy_config) if fresh else copy.deepcopy(self.policy)
            config = replace(
                self.train.fit,
                steps=self.train.fit.steps if new_stage else self.train.finetune_steps,
                rehearsal_share=share,
                seed=int(rng.integers(2**31)),
                progress=False,
            )
            logs = self.output_dir / "train" / checkpoint_name(k)
            if draw:
                logs = logs / f"redraw_{draw}"
            if tag is not None:
                logs = logs / tag
            if self.train.candidates > 1:
                logs = logs / f"candidate_{i}"
            jobs.append(CloneJob(policy, torch.get_rng_state(), config, current, rehearsal, new_stage, logs))
        return jobs

    def _rehearsal_share(self, node: SkillNode, skills: int) -> float:
        """Share of each batch from the ``skills`` other skills that training ``node`` rehearses:
        ``train.rehearsal_share``, except when consolidating a forgotten (mastered) node, where
        every skill weighs as much as the node's own, or the others are forgotten in turn."""
        if self._consolidating(node) and skills:
            return skills / (skills + 1)
        return self.train.fit.rehearsal_share

    def _consolidating(self, node: SkillNode) -> bool:
        """Whether training ``node`` consolidates it: it is mastered, and not trained on past its
        mastery (``budget.past_mastery``)."""
        past = self.budget.past_mastery and node.name in self.budget.until
        return self.tree.status[node.name] == MASTERED and not past

    def _select(
        self,
        node: SkillNode,
        k: int,
        candidates: list[tuple[VLAPolicy, dict]],
        new_stage: bool,
        own_best: bool = False,
        draw: Callable[[int], tuple[list[tuple[VLAPolicy, dict]], list[str]]] | None = None,
        sets: list[str] | None = None,
    ) -> tuple[dict, dict | None]:
        """Make the best of ``candidates`` (:func:`selection_score`) the policy, unless the current
        one does better closed loop on this iteration's selection tasks
        (``CloneConfig.select_episodes``; every policy runs the same tasks). While none of them
        holds every bar there, ``draw`` (:meth:`_cloner`) trains up to ``train.redraws`` more
        rounds, which join ``candidates`` (and their data sets' names ``sets``; both lists grow
        in place). A new stage takes the best candidate whatever it scores. Returns the training
        history of the policy taken (or of the best candidate) and what was measured (None
        without selection); with ``own_best``, the record's ``own_best`` is the candidate best on
        the node's own success (ties by the score), for choosing what it learnt from."""
        n = self.train.select_episodes
        if not n:
            self.policy, fit = candidates[0]
            return fit, None
        nodes = [node, *self._kept(node)]
        pool_tasks = self._pool_selection_tasks(node, k)

        def rates(policy: VLAPolicy) -> dict[str, float]:
            out = {
                m.name: evaluate_policy(
                    policy, m.distribution(), self.backend, n, seed=self._select_seed(m, k)
                ).success_rate
                for m in nodes
            }
            if pool_tasks:
                out[pool_key(node.name)] = evaluate_tasks(policy, pool_tasks, self.backend).success_rate
            return out

        bars = {m.name: m.mastery for m in nodes} | {pool_key(node.name): 0.0}
        measured = [rates(policy) for policy, _ in candidates]
        redraws = 0
        # A shortfall below a bar: the seed lottery is drawn again (clones of the same data differ
        # by up to 90 points; README, "A new stage's clones").
        while (
            draw is not None
            and redraws < self.train.redraws
            and max(selection_score(r, bars) for r in measured)[0] < 0
        ):
            redraws += 1
            more, names = draw(redraws)
            candidates += more
            if sets is not None:
                sets += names
            measured += [rates(policy) for policy, _ in more]
        scores = [selection_score(r, bars) for r in measured]
        best = max(range(len(scores)), key=scores.__getitem__)  # the first of equals
        current = None
        if self.policy is not None and not new_stage:
            current = rates(self.policy)
        take = current is None or scores[best] >= selection_score(current, bars)
        if take:
            self.policy = candidates[best][0]
        record = {"candidates": measured, "current": current, "taken": best if take else None}
        if redraws:
            record["redraws"] = redraws
        if own_best:
            own = [(measured[i][node.name], *scores[i]) for i in range(len(scores))]
            record["own_best"] = max(range(len(own)), key=own.__getitem__)
        return candidates[best][1], record

    def _pool_selection_tasks(self, node: SkillNode, k: int) -> list[TaskSpec]:
        """Iteration ``k``'s ``coevolve.select_episodes`` selection tasks from the node's pool, by
        weight (none while off, or while the pool holds only the node's own distribution)."""
        pool = self._pool(node) if self.coevolve.select_episodes else None
        if pool is None or len(pool) < 2:
            return []
        rng = np.random.default_rng([self._select_seed(node, k), 1])
        return pool.sample(rng, self.coevolve.select_episodes)[0]

    def _select_seed(self, node: SkillNode, k: int) -> int:
        """Selection tasks of iteration ``k``: fresh each iteration (a policy is never kept for
        having been lucky on a fixed set), from a stream no other draw comes from."""
        index = [n.name for n in self.tree.nodes].index(node.name)
        return int(np.random.SeedSequence([self.seed, 2**31 - 2, index, k]).generate_state(1)[0] >> 1)

    def _eval_seed(self, node: SkillNode) -> int:
        """Held-out evaluation tasks: the same per node for the whole run (so success curves
        compare like with like), drawn from a stream the explorer's seeds never come from."""
        index = [n.name for n in self.tree.nodes].index(node.name)
        return int(np.random.SeedSequence([self.seed, 2**31 - 1, index]).generate_state(1)[0] >> 1)

    def _save_checkpoint(self, k: int) -> str:
        """Save the policy to ``checkpoints/iter_<k>`` (written aside and renamed into place)."""
        root = self.output_dir / CHECKPOINTS
        final = root / checkpoint_name(k)
        tmp = root / f".{final.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        self.policy.save_pretrained(tmp)
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        return str(final.relative_to(self.output_dir))

    def _videos(self, node: SkillNode, trajs, k: int) -> dict[str, str]:
        v = self.video
        if not v.every or k % v.every:
            return {}
        paths = render_highlights(
            trajs,
            self.output_dir / "videos",
            f"iter{k:03d}_{node.name}_",
            v.camera,
            tuple(v.size),
            v.frame_every,
        )
        return {name: str(p.relative_to(self.output_dir)) for name, p in paths.items()}

    def _tensorboard(self, record: dict) -> None:
        from torch.utils.tensorboard import SummaryWriter

        k = record["iteration"]
        with SummaryWriter(str(self.output_dir / "tensorboard")) as w:
            for name, rate in record["success"].items():
                w.add_scalar(f"success/{name}", rate, k)
            for skill, n in record["library"].items():
                w.add_scalar(f"library/{skill}", n, k)
            w.add_scalar("trials_total", record["trials_total"], k)
            if record["train"] is not None:
                w.add_scalar("train/best_val_loss", record["train"]["best_val_loss"], k)

    def _plots(self) -> None:
        plots.draw_run(self.tree, self.output_dir, self.state.trials)

    def summary(self, reason: str = "") -> dict[str, Any]:
        return {
            "stopped": reason,
            "iterations": self.state.iteration,
            "trials": self.state.trials,
            "elapsed_s": self.state.elapsed_s,
            "status": dict(self.tree.status),
            "success": {n.name: self.tree.latest_success(n.name) for n in self.tree.nodes},
            "library": dict(self.state.library),
            "checkpoint": self.state.checkpoint,
            "nodes": {
                name: {k: v for k, v in info.items() if k != "modes"}
                for name, info in self.state.nodes.items()
            },
            "budget": asdict(self.budget),
            "task_pools": {name: len(pool) for name, pool in self.pools.items()},
        }
