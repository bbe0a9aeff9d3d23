"""SkillTree: which skill is trained now, when a skill is mastered, and what mastering it unlocks.

A node is a skill to learn (its success predicate is the skill's, ``scoring.success``), the
instruction the policy is given for it, the distribution its tasks are drawn from, a mastery
threshold on closed-loop policy success over held-out tasks, and its prerequisites. A node is
*locked* until all its prerequisites are mastered, then *active* until the policy masters it.
Training a node rehearses its ancestors (its prerequisites, recursively), so that nothing learned
before is forgotten.

A tree may also name **recipes** (``Recipe``): sequences of its nodes that one policy runs in
one episode (``robo_coevolve.recipe`` runs and judges them), evaluated once every stage is mastered.

The tree is plain data: ``to_dict``/``from_dict`` round-trip its progression, which the loop
persists after every iteration so a run resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import SKILLS, TaskSpecError, default_instruction

LOCKED, ACTIVE, MASTERED = "locked", "active", "mastered"


class SkillTreeError(ValueError):
    """An invalid skill tree configuration (unknown skill or prerequisite, a cycle, a bad
    threshold), or a persisted progression that does not belong to this tree."""


@dataclass(frozen=True)
class SkillNode:
    """One skill on the tree.

    Args:
        name: the node's name (unique in the tree).
        skill: the skill whose success predicate judges it (one of ``SKILLS``); defaults to ``name``.
        instruction: what the policy is told; defaults to the skill's standard instruction.
        requires: names of the nodes that must be mastered first.
        mastery: least closed-loop success rate of the policy over ``eval_tasks`` held-out tasks.
        eval_tasks: held-out tasks per evaluation.
        tasks: ``TaskDistribution.for_skill`` arguments of the node's reset distribution
            (egg_offset_range, egg_mass_range, friction_range, and any TaskSpec field).
    """

    name: str
    skill: str = ""
    instruction: str = ""
    requires: tuple[str, ...] = ()
    mastery: float = 0.8
    eval_tasks: int = 100
    tasks: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "skill", self.skill or self.name)
        if self.skill not in SKILLS:
            raise SkillTreeError(
                f"skill_tree node {self.name!r} has skill {self.skill!r}: choose one of {', '.join(SKILLS)}"
            )
        side = dict(self.tasks).get("egg_side_up", "yolk")
        object.__setattr__(self, "instruction", self.instruction or default_instruction(self.skill, side))
        if isinstance(self.requires, str):
            object.__setattr__(self, "requires", (self.requires,))
        object.__setattr__(self, "requires", tuple(self.requires))
        if not 0 < self.mastery <= 1:
            raise SkillTreeError(f"skill_tree node {self.name!r}: mastery={self.mastery} must be in (0, 1]")
        if self.eval_tasks < 1:
            raise SkillTreeError(f"skill_tree node {self.name!r}: eval_tasks={self.eval_tasks} must be >= 1")
        object.__setattr__(self, "tasks", dict(self.tasks))
        try:
            self.distribution()
        except (TaskSpecError, TypeError) as e:
            raise SkillTreeError(
                f"skill_tree node {self.name!r}: tasks {dict(self.tasks)} are invalid: {e}"
            ) from e

    def distribution(self) -> TaskDistribution:
        """The node's reset distribution, with the node's instruction on every task."""
        return TaskDistribution.for_skill(self.skill, **{"instruction": self.instruction, **self.tasks})


@dataclass(frozen=True)
class Recipe:
    """A named sequence of skill-tree nodes run by one policy in one episode.

    Args:
        name: the recipe's name (not a node's).
        stages: node names, in the order the policy runs them (at least two).
        eval_tasks: held-out start states per evaluation.
        mastery: the success rate the recipe is meant to reach (the picture marks it).
    """

    name: str
    stages: tuple[str, ...]
    eval_tasks: int = 200
    mastery: float = 0.7

    def __post_init__(self) -> None:
        if isinstance(self.stages, str) or len(self.stages) < 2:
            raise SkillTreeError(
                f"skill_tree recipe {self.name!r}: stages={self.stages!r} must name at least two nodes"
            )
        object.__setattr__(self, "stages", tuple(self.stages))
        if not 0 < self.mastery <= 1:
            raise SkillTreeError(f"skill_tree recipe {self.name!r}: mastery={self.mastery} must be in (0, 1]")
        if self.eval_tasks < 1:
            raise SkillTreeError(
                f"skill_tree recipe {self.name!r}: eval_tasks={self.eval_tasks} must be >= 1"
            )


class SkillTree:
    """Nodes in a dependency order, and each one's status (see the module docstring)."""

    def __init__(
        self,
        nodes: Sequence[SkillNode | Mapping[str, Any]],
        recipes: Sequence[Recipe | Mapping[str, Any]] = (),
    ):
        built = [n if isinstance(n, SkillNode) else SkillNode(**dict(n)) for n in nodes]
        if not built:
            raise SkillTreeError("skill_tree.nodes is empty: give at least one node")
        names = [n.name for n in built]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise SkillTreeError(f"skill_tree has duplicate node names {duplicates}")
        by_name = {n.name: n for n in built}
        for node in built:
            unknown = [r for r in node.requires if r not in by_name]
            if unknown:
                raise SkillTreeError(
                    f"skill_tree node {node.name!r} requires unknown node(s) {unknown}: known are {names}"
                )
        self.nodes = _topological(by_name)
        self.recipes = _recipes(recipes, names)
        self.status = {n.name: LOCKED for n in self.nodes}
        self.history: dict[str, list[dict[str, Any]]] = {n.name: [] for n in self.nodes}
        self._unlock()

    @classmethod
    def from_config(
        cls,
        nodes: Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]],
        recipes: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> SkillTree:
        """From ``{name: {skill, instruction, requires, ...}}`` (the Hydra layout) or a list, and
        ``recipes`` as ``{name: {stages: [node, ...], eval_tasks}}``."""
        made = [{"name": n, **dict(spec or {})} for n, spec in (recipes or {}).items()]
        if isinstance(nodes, Mapping):
            return cls([{"name": name, **dict(spec or {})} for name, spec in nodes.items()], made)
        return cls(list(nodes), made)

    def stages(self, recipe: str) -> list[SkillNode]:
        """The nodes of ``recipe``, in the order it runs them."""
        if recipe not in self.recipes:
            raise KeyError(f"no recipe {recipe!r} in the skill tree: known are {sorted(self.recipes)}")
        return [self.node(s) for s in self.recipes[recipe].stages]

    def node(self, name: str) -> SkillNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(f"no node {name!r} in the skill tree: known are {[n.name for n in self.nodes]}")

    def ancestors(self, name: str) -> list[SkillNode]:
        """Every prerequisite of ``name``, recursively, in tree order."""
        seen: set[str] = set()
        stack = list(self.node(name).requires)
        while stack:
            r = stack.pop()
            if r not in seen:
                seen.add(r)
                stack.extend(self.node(r).requires)
        return [n for n in self.nodes if n.name in seen]

    def children(self, name: str) -> list[SkillNode]:
        return [n for n in self.nodes if name in n.requires]

    @property
    def active(self) -> list[SkillNode]:
        """Unlocked nodes not yet mastered, in tree order (the first is trained next)."""
        return [n for n in self.nodes if self.status[n.name] == ACTIVE]

    @property
    def mastered(self) -> list[SkillNode]:
        return [n for n in self.nodes if self.status[n.name] == MASTERED]

    def kept(self, name: str) -> list[SkillNode]:
        """The nodes whose skills training ``name`` must keep: its ancestors and every other
        mastered node, in tree order."""
        keep = {a.name for a in self.ancestors(name)} | {m.name for m in self.mastered}
        return [n for n in self.nodes if n.name in keep and n.name != name]

    @property
    def regressed(self) -> list[SkillNode]:
        """Mastered nodes whose latest evaluation fell below their mastery threshold (forgotten
        while later skills trained), in tree order."""
        return [n for n in self.mastered if (s := self.latest_success(n.name)) is not None and s < n.mastery]

    def is_mastered(self, names: Sequence[str] | None = None) -> bool:
        """Whether ``names`` (default: every node) are all mastered."""
        return all(self.status[n] == MASTERED for n in (names or [n.name for n in self.nodes]))

    def record(self, name: str, iteration: int, success: float) -> bool:
        """Record an evaluation of ``name``; an active node whose success reaches its mastery
        threshold becomes mastered and unlocks its children. Returns whether it was mastered now.
        A mastered node stays mastered (its later evaluations measure forgetting)."""
        node = self.node(name)
        self.history[name].append({"iteration": iteration, "success": float(success)})
        if self.status[name] == ACTIVE and success >= node.mastery:
            self.status[name] = MASTERED
            self._unlock()
            return True
        return False

    def _unlock(self) -> None:
        for n in self.nodes:
            if self.status[n.name] == LOCKED and all(self.status[r] == MASTERED for r in n.requires):
                self.status[n.name] = ACTIVE

    def to_dict(self) -> dict[str, Any]:
        """The progression (status and evaluation history per node) and the node names."""
        return {"nodes": [n.name for n in self.nodes], "status": dict(self.status), "history": self.history}

    def load_progress(self, data: Mapping[str, Any]) -> None:
        """Restore a progression saved with ``to_dict`` (the tree must have the same nodes)."""
        if list(data["nodes"]) != [n.name for n in self.nodes]:
            raise SkillTreeError(
                f"the saved progression is of nodes {list(data['nodes'])}, this tree has "
                f"{[n.name for n in self.nodes]}: resume with the skill_tree the run started with"
            )
        self.status = dict(data["status"])
        self.history = {k: list(v) for k, v in data["history"].items()}

    def latest_success(self, name: str) -> float | None:
        h = self.history[name]
        return h[-1]["success"] if h else None


def _recipes(recipes: Sequence[Recipe | Mapping[str, Any]], names: list[str]) -> dict[str, Recipe]:
    """The tree's recipes by name, each stage a node of the tree."""
    out: dict[str, Recipe] = {}
    for r in recipes:
        try:
            recipe = (
                r if isinstance(r, Recipe) else Recipe(**{**dict(r), "stages": tuple(r.get("stages", ()))})
            )
        except TypeError as e:
            raise SkillTreeError(f"skill_tree recipe {dict(r).get('name')!r} is invalid: {e}") from e
        unknown = [s for s in recipe.stages if s not in names]
        if unknown:
            raise SkillTreeError(
                f"skill_tree recipe {recipe.name!r} names unknown node(s) {unknown}: known are {names}"
            )
        if recipe.name in names or recipe.name in out:
            raise SkillTreeError(f"skill_tree recipe {recipe.name!r}: the name is taken by a node or recipe")
        out[recipe.name] = recipe
    return out


def _topological(by_name: dict[str, SkillNode]) -> list[SkillNode]:
    """Nodes ordered so that each comes after its prerequisites (config order among equals)."""
    order: list[SkillNode] = []
    state: dict[str, int] = {}  # 1 = on the current path, 2 = placed

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name) :] + [name]
            raise SkillTreeError(f"skill_tree has a prerequisite cycle: {' -> '.join(cycle)}")
        state[name] = 1
        for r in by_name[name].requires:
            visit(r, path + [name])
        state[name] = 2
        order.append(by_name[name])

    for name in by_name:
        visit(name, [])
    return order
