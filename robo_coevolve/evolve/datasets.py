"""The data a node's training clones and rehearses: its latest library segments, whole or per
teacher (the motion primitives' or the policy's own, ``CloneConfig.split_sources``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from robo_coevolve.evolve.config import CloneConfig
from robo_coevolve.library import SkillLibrary
from robo_coevolve.skill_tree import SkillNode

log = logging.getLogger(__name__)

# Trajectory sources (``Trajectory.meta["source"]``) whose segments are the policy's own behaviour;
# every other segment (the first search's examples, later primitive trials, synthesis checks) was
# a motion primitive's.
POLICY_SOURCES = ("policy", "adversary")


def segment_source(meta: dict[str, Any]) -> str:
    """The teacher of a stored segment (``SkillLibrary.metadata(...)["meta"]``): "policy" or
    "primitives"."""
    return "policy" if meta.get("source", {}).get("source") in POLICY_SOURCES else "primitives"


def latest_indices(metadata: Iterable[dict], source: str | None, limit: int) -> list[int]:
    """Indices of the latest ``limit`` segments among ``metadata`` (``SkillLibrary.metadata``
    entries, in library order) taught by ``source`` (:func:`segment_source`; None: any)."""
    chosen = [m["index"] for m in metadata if source is None or segment_source(m["meta"]) == source]
    return chosen[-limit:]


def latest_by_source(library: SkillLibrary, skill: str, limit: int) -> dict[str, list[int]]:
    """Indices of the latest ``limit`` segments of ``skill`` per source that has any, primitives
    first (selection takes the first of equals)."""
    metadata = library.metadata(skill)
    by_source = {source: latest_indices(metadata, source, limit) for source in ("primitives", "policy")}
    return {source: idx for source, idx in by_source.items() if idx}


def data_sets(
    library: SkillLibrary, node: SkillNode, train: CloneConfig, consolidating: bool
) -> dict[str, list]:
    """The node's data sets to clone: its latest ``max_segments`` segments, or with
    ``split_sources``, those of each source (:func:`segment_source`) that has at least
    ``min_source_segments`` (every source that has any, when none has that many, or when
    ``consolidating``: a fine-tune of the kept policy, not a fresh clone)."""
    if not train.split_sources:
        return {"latest": library.segments(node.skill, last=train.max_segments)}
    latest = latest_by_source(library, node.skill, train.max_segments)
    least = 0 if consolidating else train.min_source_segments
    enough = {source: idx for source, idx in latest.items() if len(idx) >= least}
    if enough and len(enough) < len(latest):
        log.info(
            "%s: not cloned apart, under train.min_source_segments=%d: %s",
            node.name,
            train.min_source_segments,
            {source: len(idx) for source, idx in latest.items() if source not in enough},
        )
        latest = enough
    return {source: library.segments(node.skill, indices=latest[source]) for source in latest}


def rehearsal_data(library: SkillLibrary, node: SkillNode, train: CloneConfig, source: str | None) -> list:
    """A kept node's rehearsal data: its latest ``max_segments`` segments, with ``split_sources``
    from ``source``, the one its policy was last cloned from (None: not recorded yet, any)."""
    if source is None or not train.split_sources:
        return library.segments(node.skill, last=train.max_segments)
    indices = latest_by_source(library, node.skill, train.max_segments).get(source, [])
    return library.segments(node.skill, indices=indices)
