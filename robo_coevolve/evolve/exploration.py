"""Exploration in the loop: a node's first primitive search, then each later iteration's trials
split between primitives around the modes found and the policy's own noisy episodes
(``ExploreSchedule``), every trial scored by the simulator."""

from __future__ import annotations

import numpy as np

from robo_coevolve.evolve.pools import TaskPools
from robo_coevolve.evolve.schedule import ExploreSchedule
from robo_coevolve.explore.closed_loop import PolicyEpisode
from robo_coevolve.explore.open_loop import Trial
from robo_coevolve.explore.plans import PrimitivePlan
from robo_coevolve.explore.search import PrimitiveSearch, SearchConfig
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillNode


def trials_left(planned: int, validation: int, budget_left: int | None = None) -> int:
    """How many of an iteration's ``planned`` exploration trials it runs after ``validation``
    synthesis trials: those come out of the plan (down to half of it), and no more than the
    ``budget_left`` trials the run's budget has left after them (None: no limit)."""
    left = max(planned // 2, planned - validation)
    if budget_left is not None:
        left = min(left, max(0, budget_left - validation))
    return left


class Explorer:
    """Runs an iteration's exploration of a node on ``backend``: the node's first ``search``
    while it has no modes, then trials split by ``schedule``, their tasks drawn from ``pools``.
    With ``compare_examples``, a first search returns every contending example set, not only
    its examples (``CloneConfig.compare_examples``)."""

    def __init__(
        self,
        search: SearchConfig,
        schedule: ExploreSchedule,
        backend,
        pools: TaskPools,
        compare_examples: bool = False,
    ):
        self.search = search
        self.schedule = schedule
        self.backend = backend
        self.pools = pools
        self.compare_examples = compare_examples

    def first_search(
        self, node: SkillNode, info: dict, rng: np.random.Generator, k: int
    ) -> tuple[dict, dict]:
        """The node's primitive search; ``info`` (the node's run state) gains its modes and
        answer if it found examples. Returns the contending example sets (name -> successes)
        and the metrics record's ``explore`` entry."""
        pool = self.pools.of(node)
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
            None if pool is None else (lambda _, trajs: self.pools.record(node, trajs, [0] * len(trajs), k))
        )
        result = s.run(search, on_generation=record)
        contenders = result.contenders if self.compare_examples else {"examples": result.examples}
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
            out["polish"] = {key: v for key, v in result.polish.items() if key != "answer"}
        if len(contenders) > 1:
            out["contenders"] = {name: len(found) for name, found in contenders.items()}
        if pool is not None:
            out["coevolve"] = {"pool": len(pool)}
        return contenders, out

    def around_modes(
        self,
        node: SkillNode,
        modes: list,
        policy_success: float | None,
        policy: VLAPolicy | None,
        rng: np.random.Generator,
        k: int,
        synthesis=None,
        budget_left: int | None = None,
    ) -> tuple[dict, dict]:
        """A later iteration's trials: split by the policy's latest success on the node
        (``policy_success``), cut by ``synthesis``'s validation trials and ``budget_left``
        (:func:`trials_left`), primitives around ``modes`` and ``policy``'s noisy episodes.
        Returns {"explored": successes} and the metrics record's ``explore`` entry."""
        meta = {"iteration": k, "node": node.name}
        pool = self.pools.of(node)
        n_primitive, n_policy = self.schedule.split(policy_success)
        validation = 0 if synthesis is None else synthesis.validation_trials
        n_primitive, n_policy = self.schedule.shrink(
            n_primitive, n_policy, trials_left(n_primitive + n_policy, validation, budget_left)
        )
        mode_of = None  # each primitive trial's search mode, when the pool counts them
        if pool is not None:
            # Co-evolution: the primitive/policy split per task variant (ExploreSchedule.primitive_chance),
            # and each variant's primitives around the modes that solve it (PoolEntry.choose_modes).
            drawn, entries = self.pools.draw(node, rng, n_primitive + n_policy)
            grip = [pool.entries[i].policy_success() for i in entries]
            as_primitive = self.schedule.as_primitive(grip, rng) if n_policy else np.ones(len(drawn), bool)
            primitive_tasks = [(t, i) for t, i, p in zip(drawn, entries, as_primitive, strict=True) if p]
            policy_tasks = [(t, i) for t, i, p in zip(drawn, entries, as_primitive, strict=True) if not p]
            mode_of, params = pool.primitive_params(
                [i for _, i in primitive_tasks], modes, rng, self.schedule.primitive_jitter
            )
        else:
            params = self.schedule.primitive_params(modes, n_primitive, rng)
            primitive_tasks = list(zip(*self.pools.draw(node, rng, n_primitive), strict=True))
            policy_tasks = list(zip(*self.pools.draw(node, rng, n_policy), strict=True))
        n_primitive, n_policy = len(primitive_tasks), len(policy_tasks)
        trajs = []
        if n_primitive:
            trials = [
                Trial(t, PrimitivePlan(p), {**meta, "source": "primitive"})
                for (t, _), p in zip(primitive_tasks, params, strict=True)
            ]
            trajs += self.backend.run_trials(trials)
            self.pools.record(node, trajs, [i for _, i in primitive_tasks], k, modes=mode_of, params=params)
        policy_trajs = []
        if n_policy:
            seeds = rng.integers(2**31 - 1, size=n_policy)
            episodes = [
                PolicyEpisode(t, self.schedule.noise(i), int(s), {**meta, "source": "policy"})
                for i, ((t, _), s) in enumerate(zip(policy_tasks, seeds, strict=True))
            ]
            policy_trajs = self.backend.run_policy(policy, episodes)
            self.pools.record(node, policy_trajs, [i for _, i in policy_tasks], k, policy=True)
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
