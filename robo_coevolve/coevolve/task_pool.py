"""TaskPool: the task variants an evolving node trains on, their sampling weights and outcomes.

Each entry is a ``TaskDistribution`` (a base TaskSpec with its own egg mass, size, frictions, pan
height and disturbance, start poses drawn around it at reset) with a weight and the outcomes of
every trial run on it (iteration, success). The pool starts with the node's own distribution;
the ``TaskSynthesizer`` adds variants near the weak spots and re-weights the entries. Sampling
picks an entry by weight and draws a concrete task from it with the caller's Generator, so the
same Generator state gives the same tasks.

The pool is saved as ``coevolve/<node>.json`` in the run directory, written aside and renamed,
at the loop's commit point; a resumed run loads the copy of its last completed iteration.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robo_coevolve.atomic import write_text_atomic
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.task_spec import TaskSpec

FORMAT_VERSION = 1
OWN = -1  # the mode index of a variant's own search in ``PoolEntry.mode_outcomes``
ELITES_KEPT = 16  # best primitive trials kept per variant
OWN_ELITES = 8  # of which a variant's own search is refitted to


class TaskPoolError(ValueError):
    """A pool file that cannot be read; the message names it and what to do."""


@dataclass
class PoolEntry:
    """One task variant.

    Attributes:
        tasks: the variant's distribution (its base TaskSpec fixes the physics).
        weight: relative sampling weight (>= 0).
        origin: "seed" (the node's own distribution), "synthesized" or "adversary".
        parent: index of the entry it was derived from (None for a seed).
        iteration: the loop iteration that added it (0 for a seed).
        outcomes: (iteration, success) of every trial run on it, oldest first.
        policy_outcomes: those of the policy's own exploration episodes among them (the
            variant's grip, ``policy_success``).
        mode_outcomes: (iteration, mode, success) of the primitive trials among them, by the
            index of the node's search mode they were drawn around, or ``OWN`` for the
            variant's own search (``choose_modes``).
        elites: (score, parameters) of the best primitive trials run on it, best first, at most
            ``ELITES_KEPT``: the variant's own cross-entropy search (``own_mode``).
    """

    tasks: TaskDistribution
    weight: float = 1.0
    origin: str = "seed"
    parent: int | None = None
    iteration: int = 0
    outcomes: list[tuple[int, bool]] = field(default_factory=list)
    policy_outcomes: list[tuple[int, bool]] = field(default_factory=list)
    mode_outcomes: list[tuple[int, int, bool]] = field(default_factory=list)
    elites: list[tuple[float, list[float]]] = field(default_factory=list)

    @property
    def base(self) -> TaskSpec:
        return self.tasks.base

    def success_rate(self, last: int | None = None) -> float | None:
        """Success rate over the ``last`` outcomes (all when None); None without outcomes."""
        rows = self.outcomes if last is None else self.outcomes[-last:]
        return float(np.mean([s for _, s in rows])) if rows else None

    def policy_success(self) -> float | None:
        """Success rate of the policy's episodes in the last iteration that ran any (None: none
        has run on this variant yet)."""
        if not self.policy_outcomes:
            return None
        last = self.policy_outcomes[-1][0]
        return float(np.mean([s for k, s in self.policy_outcomes if k == last]))

    def choose_modes(self, n_modes: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n,) indices of the node's search modes, or ``OWN`` for the variant's own search once
        it has one (``own_mode``), for ``n`` primitive trials on this variant, by Thompson
        sampling: each trial takes the arm with the highest draw from Beta(1 + wins, 1 + losses)
        of that arm's trials here. A mode that solves the standard egg may not solve a light one,
        and one can be dead everywhere; untried arms keep being tried."""
        arms = n_modes + self.has_own_search
        wins, losses = np.zeros(arms), np.zeros(arms)
        for _, m, s in self.mode_outcomes:
            a = n_modes if m == OWN else m
            if a < arms:
                (wins if s else losses)[a] += 1
        draws = rng.beta(1.0 + wins, 1.0 + losses, size=(n, arms))
        chosen = draws.argmax(axis=1)
        return np.where(chosen == n_modes, OWN, chosen)

    def add_elite(self, score: float, params: np.ndarray) -> None:
        """Keep a primitive trial's ``params`` if its ``score`` is among the ``ELITES_KEPT`` best here."""
        self.elites.append((float(score), [round(float(v), 6) for v in params]))
        self.elites.sort(key=lambda e: -e[0])
        del self.elites[ELITES_KEPT:]

    @property
    def has_own_search(self) -> bool:
        """Whether the variant has enough scored primitive trials for ``own_mode``."""
        return len(self.elites) >= OWN_ELITES

    def own_mode(self, min_std: float = 0.03, radius: float = 0.2) -> tuple[np.ndarray, np.ndarray] | None:
        """(mean, std) of the variant's own search, None before it has ``OWN_ELITES`` scored
        primitive trials: a Gaussian refitted to its best trial so far and the others of its
        ``OWN_ELITES`` best that lie within ``radius`` (RMS distance per parameter) of it, so
        the fit never lands between two solution modes (``MixtureCEM``), its spread floored at
        ``min_std``. The node's modes come from the standard egg, and an 80 g egg slides off all
        of them; this search solves it within a few rounds of trials
        (``tests/coevolve/test_synthesizer.py``)."""
        if not self.has_own_search:
            return None
        x = np.array([p for _, p in self.elites[:OWN_ELITES]])
        near = x[np.sqrt(((x - x[0]) ** 2).mean(axis=1)) <= radius]
        return near.mean(axis=0), np.maximum(near.std(axis=0), min_std)

    def sample_own(self, rng: np.random.Generator, min_std: float = 0.03) -> np.ndarray:
        """Parameters for one trial of the variant's own search (``own_mode``), in the unit cube."""
        if not self.has_own_search:
            raise ValueError(
                f"no own search on this variant yet: it needs {OWN_ELITES} scored primitive trials"
            )
        mean, std = self.own_mode(min_std)
        return np.clip(mean + std * rng.standard_normal(mean.shape), 0.0, 1.0)

    def own_success(self, iteration: int) -> tuple[float | None, int, float | None]:
        """Over the primitive trials of ``iteration``: the success rate of the variant's own
        search and its number of trials, and the success rate of the best node mode (None: no
        trial of that kind)."""
        rows: dict[int, list[bool]] = {}
        for k, m, s in self.mode_outcomes:
            if k == iteration:
                rows.setdefault(m, []).append(s)
        own = rows.pop(OWN, [])
        best = max((float(np.mean(v)) for v in rows.values()), default=None)
        return (float(np.mean(own)) if own else None), len(own), best

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks.to_dict(),
            "weight": self.weight,
            "origin": self.origin,
            "parent": self.parent,
            "iteration": self.iteration,
            "outcomes": [[int(k), int(bool(s))] for k, s in self.outcomes],
            "policy_outcomes": [[int(k), int(bool(s))] for k, s in self.policy_outcomes],
            "mode_outcomes": [[int(k), int(m), int(bool(s))] for k, m, s in self.mode_outcomes],
            "elites": [[float(v), list(p)] for v, p in self.elites],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PoolEntry:
        t = data["tasks"]
        return cls(
            tasks=TaskDistribution(
                TaskSpec.from_dict(t["base"]), float(t["egg_mass_range"]), float(t["friction_range"])
            ),
            weight=float(data["weight"]),
            origin=str(data["origin"]),
            parent=data["parent"],
            iteration=int(data["iteration"]),
            outcomes=[(int(k), bool(s)) for k, s in data["outcomes"]],
            # Absent from pools saved before the per-variant split: nothing counted yet.
            policy_outcomes=[(int(k), bool(s)) for k, s in data.get("policy_outcomes", [])],
            mode_outcomes=[(int(k), int(m), bool(s)) for k, m, s in data.get("mode_outcomes", [])],
            elites=[(float(v), [float(x) for x in p]) for v, p in data.get("elites", [])],
        )


class TaskPool:
    """Weighted task variants of one skill; see the module docstring.

    Args:
        entries: the variants (at least one, all of one skill).
        visits_kept: most recent visited task points kept for the rare signal.
    """

    def __init__(self, entries: Sequence[PoolEntry], visits_kept: int = 5000):
        entries = list(entries)
        if not entries:
            raise ValueError("a TaskPool needs at least one entry (the node's own distribution)")
        skills = {e.base.skill for e in entries}
        if len(skills) != 1:
            raise ValueError(f"a TaskPool holds tasks of one skill, got {sorted(skills)}")
        self.entries = entries
        self.visits_kept = int(visits_kept)
        # Feature points (unit cube of a TaskSpace) of the concrete tasks trials ran on.
        self.visits: list[list[float]] = []
        self.set_aside: list[dict[str, Any]] = []  # candidates not yet shown solvable, to retry
        self.searched: list[int] = []  # variants an AnswerSearch has searched on

    @classmethod
    def seeded(cls, tasks: TaskDistribution, **kwargs: Any) -> TaskPool:
        """A pool holding only ``tasks`` (the node's own distribution)."""
        return cls([PoolEntry(tasks)], **kwargs)

    @property
    def skill(self) -> str:
        return self.entries[0].base.skill

    def __len__(self) -> int:
        return len(self.entries)

    def weights(self) -> np.ndarray:
        """(len,) sampling probabilities (the weights normalised; uniform if all are 0)."""
        w = np.array([e.weight for e in self.entries], np.float64)
        total = w.sum()
        return w / total if total > 0 else np.full(len(w), 1.0 / len(w))

    def sample(self, rng: np.random.Generator, n: int) -> tuple[list[TaskSpec], list[int]]:
        """``n`` concrete tasks and the index of the entry each came from (drawn by weight)."""
        index = rng.choice(len(self.entries), size=n, p=self.weights()) if n else np.zeros(0, int)
        tasks = [self.entries[int(i)].tasks.sample(rng) for i in index]
        return tasks, [int(i) for i in index]

    def primitive_params(
        self, entries: Sequence[int], modes: Sequence[np.ndarray], rng: np.random.Generator, jitter: float
    ) -> tuple[list[int], np.ndarray]:
        """For one primitive trial on each of ``entries``: the arm each variant chooses
        (``PoolEntry.choose_modes``: a node mode's index, or ``OWN``) and the unit-cube
        parameters, around that mode with ``jitter`` (standard deviation) or from the variant's
        own search."""
        which = [int(self.entries[i].choose_modes(len(modes), 1, rng)[0]) for i in entries]
        modes = np.asarray(modes, np.float64).reshape(len(modes), -1)
        centres = modes[np.maximum(np.asarray(which, int), 0)]
        params = np.clip(centres + rng.normal(0.0, jitter, size=centres.shape), 0.0, 1.0)
        for j, (i, m) in enumerate(zip(entries, which, strict=True)):
            if m == OWN:
                params[j] = self.entries[i].sample_own(rng, jitter)
        return which, params

    def add(self, entry: PoolEntry) -> int:
        """Append ``entry`` (of the pool's skill); returns its index."""
        if entry.base.skill != self.skill:
            raise ValueError(f"task of skill {entry.base.skill!r} added to a {self.skill} pool")
        self.entries.append(entry)
        return len(self.entries) - 1

    def record(
        self,
        index: int,
        success: bool,
        iteration: int,
        point: np.ndarray | None = None,
        policy: bool = False,
        mode: int | None = None,
        elite: tuple[float, np.ndarray] | None = None,
    ) -> None:
        """Count one trial of entry ``index``; ``point`` is its task's feature point (rare signal);
        ``policy``: it was one of the policy's exploration episodes (the variant's grip);
        ``mode``: it was a primitive trial around the node's search mode of that index (or the
        variant's own search, ``OWN``), and ``elite`` its (score, parameters)."""
        self.entries[index].outcomes.append((int(iteration), bool(success)))
        if policy:
            self.entries[index].policy_outcomes.append((int(iteration), bool(success)))
        if mode is not None:
            self.entries[index].mode_outcomes.append((int(iteration), int(mode), bool(success)))
        if elite is not None:
            self.entries[index].add_elite(*elite)
        if point is not None:
            self.visit(point)

    def visit(self, point: np.ndarray) -> None:
        """Count a trial at task feature ``point`` (the rare signal), keeping the latest ``visits_kept``."""
        self.visits.append([round(float(v), 5) for v in point])
        if len(self.visits) > self.visits_kept:
            del self.visits[: len(self.visits) - self.visits_kept]

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "visits_kept": self.visits_kept,
            "entries": [e.to_dict() for e in self.entries],
            "visits": self.visits,
            "set_aside": self.set_aside,
            "searched": self.searched,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskPool:
        if data.get("format") != FORMAT_VERSION:
            raise TaskPoolError(f"task pool format {data.get('format')!r} is not {FORMAT_VERSION}")
        pool = cls([PoolEntry.from_dict(e) for e in data["entries"]], int(data["visits_kept"]))
        pool.visits = [list(map(float, v)) for v in data["visits"]]
        pool.set_aside = list(data["set_aside"])
        pool.searched = [int(i) for i in data.get("searched", [])]  # absent before answer searches
        return pool

    def save(self, path: str | Path) -> Path:
        """Write the pool to ``path`` atomically (a crash leaves the previous file whole)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_text_atomic(path, json.dumps(self.to_dict()))

    @classmethod
    def load(cls, path: str | Path) -> TaskPool:
        """The pool saved at ``path``; a damaged file raises ``TaskPoolError`` naming it."""
        path = Path(path)
        try:
            return cls.from_dict(json.loads(path.read_text()))
        except FileNotFoundError:
            raise TaskPoolError(f"no task pool at {path}: was the run started with coevolve on?") from None
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise TaskPoolError(
                f"{path} is not a readable task pool ({type(e).__name__}: {e}); restore it from a copy "
                "or start the run in a new directory"
            ) from None
