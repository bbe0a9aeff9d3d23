"""Curriculum: which node of the skill tree the next iteration works on, and when the run stops."""

from __future__ import annotations

from robo_coevolve.evolve.config import Budget
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.skill_tree import MASTERED, SkillNode, SkillTree


class Curriculum:
    """The order of work over ``tree`` under ``budget``: the first active node; once the nodes of
    ``budget.until`` are mastered, with ``past_mastery`` the last of them, with ``consolidate`` the
    first mastered node whose success has since fallen below its bar."""

    def __init__(self, tree: SkillTree, budget: Budget):
        for name in budget.until or ():
            tree.node(name)  # KeyError names the known nodes
        self.tree = tree
        self.budget = budget

    def focus(self) -> SkillNode | None:
        """The node the next iteration works on (None: done)."""
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

    def stop_reason(self, state: RunState) -> str | None:
        """Why the run is over after ``state`` (None: it goes on)."""
        b = self.budget
        if self.focus() is None:
            return "mastered" if self.tree.is_mastered(b.until) else "no active node"
        if state.iteration >= b.iterations:
            return "iterations"
        # elapsed_s sums the committed iterations' times, of this session and of any before a
        # resume: it already counts this session's.
        if b.minutes is not None and state.elapsed_s >= 60 * b.minutes:
            return "minutes"
        if b.trials is not None and state.trials >= b.trials:
            return "trials"
        return None

    def kept(self, node: SkillNode) -> list[SkillNode]:
        """The nodes whose skills training ``node`` must keep (:meth:`SkillTree.kept`: its
        ancestors and every other mastered node; rehearsed, evaluated and in selection)."""
        return self.tree.kept(node.name)

    def consolidating(self, node: SkillNode) -> bool:
        """Whether training ``node`` consolidates it: it is mastered, and not trained on past its
        mastery (``budget.past_mastery``)."""
        past = self.budget.past_mastery and node.name in self.budget.until
        return self.tree.status[node.name] == MASTERED and not past

    def trials_left(self, state: RunState) -> int | None:
        """Trials the run's ``budget.trials`` has left after ``state`` (None: no such limit)."""
        return None if self.budget.trials is None else self.budget.trials - state.trials
