"""EvolutionLoop: from nothing to a chain of mastered skills, one iteration at a time.

Each iteration works on the node in focus (``curriculum.Curriculum``: the first active node of
the skill tree; with ``Budget.consolidate``, once every node is mastered, the first mastered node
whose success has since fallen below its bar):

0. **co-evolve** (``pools.TaskPools.synthesize``, with ``CoEvolveConfig``, once the node's first
   search found modes): a synthesis round grows and re-weights the node's task pool; an answer
   adopted there by an ``AnswerSearch`` demonstrates on the pool, its successes competing like
   the first search's;
1. **explore** (``exploration.Explorer``): a skill's first iteration searches motion primitives
   with mixture CEM, polishes the answer and demonstrates it on fresh tasks (``SearchConfig``;
   with ``CloneConfig.compare_examples``, the search's and the demonstrations' successes compete
   as example sets); later iterations split their trials between primitives around the modes
   found and the policy's own episodes with correlated noise (``ExploreSchedule``), on tasks
   drawn from the node's pool when co-evolving;
2. **score** is the simulator's: every trial comes back with its physics verdict;
3. **refine**: the successes' core segments, smoothed, replayed, novelty-gated (``Refiner``);
4. **store**: into the run's ``SkillLibrary`` (competing example sets: the winner's, after 5);
5. **train** (``cloning.Cloner`` on ``datasets.data_sets``): behaviour cloning of the policy on
   the node's latest segments (with ``CloneConfig.split_sources``, each teacher's apart),
   rehearsing those of the nodes it keeps (``datasets.rehearsal_data``); ``candidates`` policies
   from different seeds; with ``select_episodes``, ``selection.select`` keeps the best of them
   closed loop on selection tasks if it does at least as well there as the current policy,
   drawing more rounds (``redraws``) while none holds every bar;
5b. **practise** (``practice.stage``, with ``PracticeConfig``; off by default): a newly selected
   clone, saved as ``checkpoints/iter_<k>_clone``, practises closed loop on the node's tasks and
   those of the nodes it keeps, and the practised policy is kept if it does at least as well on
   the selection tasks;
6. **evaluate**: closed-loop success of the policy on held-out tasks of the node and of those it
   keeps (forgetting shows there); the tree marks the node mastered at its threshold and unlocks
   its children.

Then the iteration commits (``artifacts``): checkpoint, videos, task pools, metrics line,
tensorboard, and ``state.json`` last, then the plots. Every random draw of iteration ``k`` comes
from ``SeedSequence([seed, k])`` and the policy is saved and reloaded bit for bit, so a run
killed at any moment and resumed (``run()`` again on the same run directory) ends exactly as an
uninterrupted one would.

When the budget ends, an optional last stage distils the policy into another, e.g. the image
policy (``DistillConfig``, ``evolve.distillation``).
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from robo_coevolve.atomic import directory_aside, write_text_atomic
from robo_coevolve.evolve import artifacts, plots
from robo_coevolve.evolve.cloning import Cloner
from robo_coevolve.evolve.config import Budget, CloneConfig, CoEvolveConfig, VideoConfig
from robo_coevolve.evolve.curriculum import Curriculum
from robo_coevolve.evolve.datasets import data_sets, rehearsal_data
from robo_coevolve.evolve.distillation import distill_run
from robo_coevolve.evolve.exploration import Explorer
from robo_coevolve.evolve.pools import TaskPools
from robo_coevolve.evolve.run_state import (
    CHECKPOINTS,
    ResumeError,
    RunState,
    checkpoint_name,
    config_differences,
    rollback,
)
from robo_coevolve.evolve.schedule import ExploreSchedule
from robo_coevolve.evolve.selection import eval_seed, recipe_seed, select, selection_tasks
from robo_coevolve.explore.search import SearchConfig
from robo_coevolve.learn import DistillConfig, evaluate_policy
from robo_coevolve.library import SkillLibrary
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.practice.config import PracticeConfig
from robo_coevolve.recipe import evaluate_recipe
from robo_coevolve.skill_tree import SkillNode, SkillTree

log = logging.getLogger(__name__)


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
        practice: the practice stage after selection (``practice.stage``; off by default).
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
        practice: PracticeConfig | None = None,
    ):
        self.curriculum = Curriculum(tree, budget)
        if refine_successes < 1:
            raise ValueError(f"refine_successes={refine_successes} must be >= 1")
        self.tree = tree
        self.policy_config = policy_config
        self.train = train
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
        self.practice = practice or PracticeConfig()
        self.pools = TaskPools(coevolve, self.output_dir)
        self.explorer = Explorer(search, schedule, backend, self.pools, train.compare_examples)
        self.policy: VLAPolicy | None = None
        self.library: SkillLibrary | None = None
        self.state = RunState()

    # -------------------------------------------------------------------------------- the run
    def run(self) -> dict[str, Any]:
        """Run (or resume) until the budget ends; returns the summary also written to
        ``summary.json``."""
        self._start()
        while (reason := self.curriculum.stop_reason(self.state)) is None:
            self.iteration(self.state.iteration + 1)
        summary = self.summary(reason)
        summary["library_digest"] = self.library.digest()  # compare runs (a resumed one too) by it
        recipes = self._recipes()
        if recipes:
            summary["recipes"] = recipes
        if self.distill.enabled and self.policy is not None:
            summary["distilled"] = self._distill()
        write_text_atomic(self.output_dir / "summary.json", json.dumps(summary, indent=2))
        plots.draw_run(self.tree, self.output_dir, self.state.trials, self.state.recipes)
        return summary

    def summary(self, reason: str = "") -> dict[str, Any]:
        """The run as it stands (``artifacts.summary``)."""
        return artifacts.summary(self.state, self.tree, self.budget, self.pools.sizes(), reason)

    def _start(self) -> None:
        """A new run, or the one saved in ``output_dir`` resumed after its last committed
        iteration (what an interrupted one left rolled back)."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.library = SkillLibrary(self.output_dir / "library")
        saved = RunState.load(self.output_dir)
        if saved is not None:
            differ = config_differences(saved.config, self.config)
            if differ:
                raise ResumeError(
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
        self.pools.restore(saved.pools)
        if saved.checkpoint is not None:
            self.policy = VLAPolicy.from_pretrained(self.output_dir / saved.checkpoint)
        log.info("resuming %s after iteration %d", self.output_dir, saved.iteration)

    def _distill(self) -> dict[str, Any]:
        """The last stage (``evolve.distillation``) on every node the policy was evaluated on."""
        nodes = [n for n in self.tree.nodes if self.tree.latest_success(n.name) is not None]
        report = distill_run(
            self.distill,
            self.policy,
            self.state.checkpoint,
            self.library,
            nodes,
            eval_seeds={n.name: eval_seed(self.seed, self.tree, n) for n in nodes},
            backend=self.backend,
            output_dir=self.output_dir,
        )
        return {
            "student": report["student"]["success"],
            "teacher": report["teacher"]["success"],
            "holds": report["holds"],
            "seconds": report["seconds"],
        }

    def _recipes(self) -> dict[str, Any]:
        """Evaluate each recipe whose stages are all mastered with the run's policy (once per
        checkpoint: a resumed run keeps the saved report), writing ``recipes/<name>.json`` and its
        videos; returns the reports by recipe."""
        reports = {}
        for name, recipe in self.tree.recipes.items():
            stages = self.tree.stages(name)
            if self.policy is None or not self.tree.is_mastered(list(recipe.stages)):
                continue
            saved = self.state.recipes.get(name)
            if saved is None or saved.get("checkpoint") != self.state.checkpoint:
                start = time.perf_counter()
                report, runs = evaluate_recipe(
                    self.policy,
                    recipe,
                    stages,
                    recipe_seed(self.seed, self.tree, name),
                    stage_success={s.name: self.tree.latest_success(s.name) for s in stages},
                )
                report["checkpoint"] = self.state.checkpoint
                report["videos"] = artifacts.render_recipe_videos(
                    self.video, self.output_dir, name, stages, runs
                )
                report["seconds"] = time.perf_counter() - start
                (self.output_dir / "recipes").mkdir(exist_ok=True)
                write_text_atomic(self.output_dir / "recipes" / f"{name}.json", json.dumps(report, indent=2))
                self.state.recipes[name] = report
                self.state.save(self.output_dir)
                log.info(
                    "recipe %s: %.0f%% of %d start states (its stages' product %.0f%%)",
                    name,
                    100 * report["success"],
                    report["n"],
                    100 * report.get("product", float("nan")),
                )
            reports[name] = self.state.recipes[name]
        return reports

    # ----------------------------------------------------------------------- one iteration
    def iteration(self, k: int) -> dict[str, Any]:
        """Iteration ``k`` on the node in focus; commits it (see the module docstring)."""
        start = time.perf_counter()
        node = self.curriculum.focus()
        if node is None:
            raise RuntimeError(f"iteration {k}: no node to work on (the run is over: see run())")
        rng = np.random.default_rng(np.random.SeedSequence([self.seed, k]))
        info = self.state.nodes[node.name]
        log.info("iteration %d: %s", k, node.name)

        # 0. co-evolve the tasks (after the node's first search)
        attacked = self.policy if self.state.trained_node == node.name else None
        synthesis, made, shown = self.pools.synthesize(node, info, attacked, self.backend, rng, k)
        # 1-2. explore, scored by physics
        if info["modes"] is None:
            contenders, explored = self.explorer.first_search(node, info, rng, k)
        else:
            contenders, explored = self.explorer.around_modes(
                node,
                info["modes"],
                self.tree.latest_success(node.name),
                self.policy,
                rng,
                k,
                synthesis,
                budget_left=self.curriculum.trials_left(self.state),
            )
        sources = {name: made + found for name, found in contenders.items()}
        if shown:  # a newly adopted answer's demonstrations compete with what exploration found
            sources = {"answer": shown, **sources}

        # 3. refine
        bank = [m["meta"]["features"] for m in self.library.metadata(node.skill) if "features" in m["meta"]]
        refined = {
            name: self.refiner.refine(
                found[-self.refine_successes :], np.array(bank) if bank else None, iteration=k
            )
            for name, found in sources.items()
        }

        # 4-5. store, and train (when example sets compete, their clones decide which is stored)
        if len(refined) == 1:
            segments, report = next(iter(refined.values()))
            self.library.add(segments)
        fit, selection = None, None
        kept = self.curriculum.kept(node)
        if len(refined) > 1:
            fit, selection, report = self._compare_examples(node, kept, rng, k, refined, info, explored)
        elif self.library.count(node.skill):
            consolidating = self.curriculum.consolidating(node)
            draw = self._cloner(node, kept, rng, k, data_sets(self.library, node, self.train, consolidating))
            candidates, sets = draw(0)
            # A node's first training is a new stage: the current policy never learnt it.
            fit, selection = self._select(
                node, k, candidates, not self.tree.history[node.name], draw=draw, sets=sets
            )
            if selection is not None and len(sets) > 1:
                selection["sources"] = sets
            if self.train.split_sources and (selection is None or selection["taken"] is not None):
                info["source"] = sets[0 if selection is None else selection["taken"]]

        # 5b. practise a newly selected clone
        practice = None
        if (
            fit is not None
            and self.practice.enabled
            and (selection is None or selection["taken"] is not None)
        ):
            practice = self._practise(node, kept, rng, k, selection)

        # 6. evaluate the node and those it keeps (not before the first success)
        evaluations, mastered = {}, False
        if fit is not None:
            for n in [node, *kept]:
                evaluations[n.name] = evaluate_policy(
                    self.policy,
                    n.distribution(),
                    self.backend,
                    n.eval_tasks,
                    seed=eval_seed(self.seed, self.tree, n),
                )
            self.pools.record_evaluations(evaluations, k)
            mastered = self.tree.record(node.name, k, evaluations[node.name].success_rate)
            for n in kept:
                self.tree.record(n.name, k, evaluations[n.name].success_rate)
        else:
            log.warning("iteration %d: no %s success survived refining yet; exploring again", k, node.name)

        # commit: checkpoint, videos, pools, metrics, then the state
        checkpoint = (
            artifacts.save_checkpoint(self.policy, self.output_dir, k)
            if fit is not None
            else self.state.checkpoint
        )
        videos = (
            artifacts.render_videos(self.video, self.output_dir, node, evaluations[node.name].trajectories, k)
            if evaluations
            else {}
        )
        info["trials"] += explored["trials"]
        info["iterations"] += 1
        pools = self.pools.save(k)
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
        if practice is not None:
            record["practice"] = practice
        artifacts.append_metrics(self.output_dir, record)
        artifacts.write_tensorboard(self.output_dir, record)
        self.state.iteration = k
        self.state.tree = self.tree.to_dict()
        self.state.library = record["library"]
        self.state.checkpoint = checkpoint
        self.state.trained_node = node.name if fit is not None else self.state.trained_node
        self.state.elapsed_s += time.perf_counter() - start
        self.state.pools = pools
        self.state.save(self.output_dir)
        self.pools.prune(k, pools)
        plots.draw_run(self.tree, self.output_dir, self.state.trials, self.state.recipes)
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

    # ----------------------------------------------------------------------- steps 4-5
    def _compare_examples(
        self,
        node: SkillNode,
        kept: list[SkillNode],
        rng: np.random.Generator,
        k: int,
        refined: dict,
        info,
        explored,
    ) -> tuple[dict | None, dict | None, Any]:
        """Competing example sets (name -> refined (segments, report)): each is cloned, the one
        whose clone does the node best is stored (the policy kept is chosen apart, by the usual
        score, which counts what it forgot). Returns the training history, the selection record
        and the stored set's refine report."""
        found = {name: segs for name, (segs, _) in refined.items() if segs}
        draw = self._cloner(node, kept, rng, k, found) if found else None
        candidates, sets = draw(0) if draw else ([], [])
        fit, selection = None, None
        if candidates:
            # What a clone forgets of the other skills is its training seed's draw; the set is kept
            # for good.
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
        return fit, selection, report

    def _practise(
        self, node: SkillNode, kept: list[SkillNode], rng: np.random.Generator, k: int, selection: dict | None
    ) -> dict[str, Any]:
        """The practice stage on the selected clone, which is saved first beside the iteration's
        checkpoint (``iter_<k>_clone``); the policy the gate keeps becomes the loop's."""
        from robo_coevolve.practice.stage import practise  # the stage scores with evolve.selection

        with directory_aside(self.output_dir / CHECKPOINTS / f"{checkpoint_name(k)}_clone") as tmp:
            self.policy.save_pretrained(tmp)
        gate = self._selection_tasks(node, k)
        clone_rates = None if selection is None else selection["candidates"][selection["taken"]]
        self.policy, record = practise(
            self.policy,
            node,
            kept,
            self.backend,
            self.practice,
            rng.spawn(1)[0],
            self.output_dir / "practice" / checkpoint_name(k),
            gate=gate,
            clone_rates=clone_rates,
        )
        gate_record = record["gate"]
        log.info(
            "iteration %d: practice kept the %s (clone %s, practised %s)",
            k,
            gate_record["kept"],
            gate_record["clone"],
            gate_record["practised"],
        )
        return record

    def _cloner(
        self, node: SkillNode, kept: list[SkillNode], rng: np.random.Generator, k: int, sets: dict[str, list]
    ) -> Cloner:
        """The cloner of the node's data ``sets``, rehearsing the kept nodes of other skills."""
        rehearsed = [
            rehearsal_data(self.library, a, self.train, self.state.nodes[a.name].get("source"))
            for a in kept
            if a.skill != node.skill
        ]
        return Cloner(
            self.train,
            self.policy_config,
            self.policy,
            node,
            k,
            sets,
            rehearsed,
            rng,
            self.output_dir,
            trained_node=self.state.trained_node,
            consolidating=self.curriculum.consolidating(node),
        )

    def _selection_tasks(self, node: SkillNode, k: int):
        """Iteration ``k``'s selection tasks of ``node`` and the nodes it keeps (``selection``)."""
        return selection_tasks(
            self.tree,
            node,
            k,
            self.seed,
            self.train.select_episodes,
            self.pools.of(node),
            self.coevolve.select_episodes,
        )

    def _select(
        self,
        node: SkillNode,
        k: int,
        candidates: list[tuple[VLAPolicy, dict]],
        new_stage: bool,
        own_best: bool = False,
        draw: Cloner | None = None,
        sets: list[str] | None = None,
    ) -> tuple[dict, dict | None]:
        """``selection.select`` on iteration ``k``'s selection tasks; the policy it keeps becomes
        the loop's."""
        tasks = self._selection_tasks(node, k)
        self.policy, fit, record = select(
            candidates, self.policy, tasks, self.backend, new_stage, own_best, draw, self.train.redraws, sets
        )
        return fit, record
