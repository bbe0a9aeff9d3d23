"""Selection among clones: each candidate and the current policy run closed loop on the same
selection tasks, and the best by :func:`selection_score` is kept (``CloneConfig.select_episodes``).

Selection and held-out evaluation tasks come from seed streams of their own, which no other draw
of the run comes from."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robo_coevolve.coevolve import TaskPool
from robo_coevolve.evaluation import seeds
from robo_coevolve.learn import evaluate_policy, evaluate_tasks
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillNode, SkillTree
from robo_coevolve.task_spec import TaskSpec

# One round of clones: the candidates (policy, training history) and the name of each one's data set.
Draw = Callable[[int], tuple[list[tuple[VLAPolicy, dict]], list[str]]]


def pool_key(node: str) -> str:
    """The name a node's pool success goes under in selection records (``select_episodes``)."""
    return f"{node}@pool"


def selection_score(rates: dict[str, float], bars: dict[str, float]) -> tuple[float, float]:
    """How well a policy does on selection tasks (node -> success rate), against each node's
    mastery bar, for comparison as a tuple (higher is better): first minus the total shortfall
    below the bars, then the mean success. The loop's goal is every bar held at once, so a
    policy that holds every bar beats one with a higher mean that has dropped a skill below its
    bar."""
    shortfall = sum(max(0.0, bars[name] - rate) for name, rate in rates.items())
    return -round(shortfall, 9), float(np.mean(list(rates.values())))


def _node_index(tree: SkillTree, node: SkillNode) -> int:
    return [n.name for n in tree.nodes].index(node.name)


def select_seed(seed: int, tree: SkillTree, node: SkillNode, k: int) -> int:
    """Selection tasks of ``node`` in iteration ``k`` of the run of ``seed``: fresh each iteration
    (a policy is never kept for having been lucky on a fixed set)."""
    index = _node_index(tree, node)
    return int(np.random.SeedSequence([seed, 2**31 - 2, index, k]).generate_state(1)[0] >> 1)


def eval_seed(seed: int, tree: SkillTree, node: SkillNode) -> int:
    """Held-out evaluation tasks of ``node`` in the run of ``seed``: the same for the whole run
    (so success curves compare like with like)."""
    index = _node_index(tree, node)
    return int(np.random.SeedSequence([seed, 2**31 - 1, index]).generate_state(1)[0] >> 1)


def recipe_seed(seed: int, tree: SkillTree, recipe: str) -> int:
    """Held-out start states of ``recipe`` in the run of ``seed`` (a stream nothing else draws)."""
    index = list(tree.recipes).index(recipe)
    return int(np.random.SeedSequence([seed, seeds.RECIPE, index]).generate_state(1)[0] >> 1)


@dataclass(frozen=True)
class SelectionTasks:
    """What every policy runs in one selection: ``episodes`` tasks of each of ``nodes`` (the node
    in focus first, then those it keeps), each node's drawn from ``seeds[name]``, and ``pool``
    tasks from the node's task pool (counted under :func:`pool_key`, with no bar)."""

    nodes: list[SkillNode]
    episodes: int
    seeds: dict[str, int]
    pool: list[TaskSpec] = field(default_factory=list)

    def rates(self, policy: VLAPolicy, backend) -> dict[str, float]:
        """The policy's success per node (and on the pool's tasks, if any)."""
        out = {
            m.name: evaluate_policy(
                policy, m.distribution(), backend, self.episodes, seed=self.seeds[m.name]
            ).success_rate
            for m in self.nodes
        }
        if self.pool:
            out[pool_key(self.nodes[0].name)] = evaluate_tasks(policy, self.pool, backend).success_rate
        return out

    def bars(self) -> dict[str, float]:
        return {m.name: m.mastery for m in self.nodes} | {pool_key(self.nodes[0].name): 0.0}


def selection_tasks(
    tree: SkillTree,
    node: SkillNode,
    k: int,
    seed: int,
    episodes: int,
    pool: TaskPool | None = None,
    pool_episodes: int = 0,
) -> SelectionTasks | None:
    """Iteration ``k``'s selection tasks for training ``node`` in the run of ``seed``:
    ``episodes`` per node (the node and those it keeps), and ``pool_episodes`` drawn from the
    node's ``pool`` by weight (none while it holds only the node's own distribution). None when
    ``episodes`` is 0: no selection."""
    if not episodes:
        return None
    nodes = [node, *tree.kept(node.name)]
    pool_tasks = []
    if pool is not None and pool_episodes and len(pool) >= 2:
        rng = np.random.default_rng([select_seed(seed, tree, node, k), 1])
        pool_tasks = pool.sample(rng, pool_episodes)[0]
    return SelectionTasks(nodes, episodes, {m.name: select_seed(seed, tree, m, k) for m in nodes}, pool_tasks)


def select(
    candidates: list[tuple[VLAPolicy, dict]],
    current: VLAPolicy | None,
    tasks: SelectionTasks | None,
    backend,
    new_stage: bool,
    own_best: bool = False,
    draw: Draw | None = None,
    redraws: int = 0,
    sets: list[str] | None = None,
) -> tuple[VLAPolicy | None, dict, dict | None]:
    """The best of ``candidates`` (:func:`selection_score`) on ``tasks``, unless the ``current``
    policy does better there (every policy runs the same tasks); without ``tasks``, the first
    candidate. While none of them holds every bar, ``draw`` (a ``cloning.Cloner``) trains up to
    ``redraws`` more rounds, which join ``candidates`` (and their data sets' names ``sets``; both
    lists grow in place). A ``new_stage`` takes the best candidate whatever it scores.

    Returns the policy to keep, the training history of the policy taken (or of the best
    candidate) and what was measured (None without ``tasks``); with ``own_best``, the record's
    ``own_best`` is the candidate best on the node's own success (ties by the score), for
    choosing what it learnt from."""
    if tasks is None:
        policy, fit = candidates[0]
        return policy, fit, None
    bars = tasks.bars()
    measured = [tasks.rates(policy, backend) for policy, _ in candidates]
    drawn = 0
    # A shortfall below a bar: the seed lottery is drawn again (clones of the same data differ widely).
    while draw is not None and drawn < redraws and max(selection_score(r, bars) for r in measured)[0] < 0:
        drawn += 1
        more, names = draw(drawn)
        candidates += more
        if sets is not None:
            sets += names
        measured += [tasks.rates(policy, backend) for policy, _ in more]
    scores = [selection_score(r, bars) for r in measured]
    best = max(range(len(scores)), key=scores.__getitem__)  # the first of equals
    rates_now = None
    if current is not None and not new_stage:
        rates_now = tasks.rates(current, backend)
    take = rates_now is None or scores[best] >= selection_score(rates_now, bars)
    record = {"candidates": measured, "current": rates_now, "taken": best if take else None}
    if drawn:
        record["redraws"] = drawn
    if own_best:
        node = tasks.nodes[0].name
        own = [(measured[i][node], *scores[i]) for i in range(len(scores))]
        record["own_best"] = max(range(len(own)), key=own.__getitem__)
    return candidates[best][0] if take else current, candidates[best][1], record
