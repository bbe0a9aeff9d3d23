"""What an iteration leaves in the run directory besides the library and the state: the policy
checkpoint, evaluation videos, the metrics line, tensorboard scalars; and the run's summary."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from robo_coevolve.atomic import directory_aside
from robo_coevolve.evolve.config import Budget, VideoConfig
from robo_coevolve.evolve.run_state import CHECKPOINTS, METRICS_FILE, RunState, checkpoint_name
from robo_coevolve.policy import VLAPolicy
from robo_coevolve.skill_tree import SkillNode, SkillTree
from robo_coevolve.video import render_highlights, render_trial, stage_overlays


def save_checkpoint(policy: VLAPolicy, output_dir: Path, k: int) -> str:
    """Save ``policy`` to ``checkpoints/iter_<k>`` (written aside and renamed into place);
    returns its path relative to ``output_dir``."""
    final = output_dir / CHECKPOINTS / checkpoint_name(k)
    with directory_aside(final) as tmp:
        policy.save_pretrained(tmp)
    return str(final.relative_to(output_dir))


def render_videos(video: VideoConfig, output_dir: Path, node: SkillNode, trajs, k: int) -> dict[str, str]:
    """Iteration ``k``'s videos of the node's evaluation (``render_highlights``) every
    ``video.every`` iterations; returns their paths relative to ``output_dir``."""
    if not video.every or k % video.every:
        return {}
    paths = render_highlights(
        trajs,
        output_dir / "videos",
        f"iter{k:03d}_{node.name}_",
        video.camera,
        tuple(video.size),
        video.frame_every,
    )
    return {name: str(p.relative_to(output_dir)) for name, p in paths.items()}


def render_recipe_videos(video: VideoConfig, output_dir: Path, name: str, stages, runs) -> dict[str, str]:
    """Videos of a recipe's evaluation (``recipe.RecipeRun`` each), the stage written on the
    frames: ``best`` (a success, else the run that got furthest) and a typical ``failure`` (of the
    most common reason, the run that got furthest); returns their paths relative to
    ``output_dir`` (none when ``video.every`` is 0)."""
    if not video.every or not runs:
        return {}
    picks = {"best": max(runs, key=lambda r: (r.success, r.stages_done))}
    failures = [r for r in runs if not r.success]
    if failures:
        common = Counter(r.reason for r in failures).most_common(1)[0][0]
        picks["failure"] = max((r for r in failures if r.reason == common), key=lambda r: r.stages_done)
    out = {}
    for kind, run in picks.items():
        path = render_trial(
            run.trajectory,
            output_dir / "videos" / f"recipe_{name}_{kind}.mp4",
            video.camera,
            tuple(video.size),
            video.frame_every,
            overlays=stage_overlays(name, stages, run.switches),
            verdict=(run.success, run.reason),
        )
        out[kind] = str(path.relative_to(output_dir))
    return out


def append_metrics(output_dir: Path, record: dict) -> None:
    """Append an iteration's record to ``metrics.jsonl``."""
    with open(output_dir / METRICS_FILE, "a") as f:
        f.write(json.dumps(record) + "\n")


def write_tensorboard(output_dir: Path, record: dict) -> None:
    """An iteration's record as tensorboard scalars: success per node, library sizes, trials and
    the training's best validation loss."""
    from torch.utils.tensorboard import SummaryWriter

    k = record["iteration"]
    with SummaryWriter(str(output_dir / "tensorboard")) as w:
        for name, rate in record["success"].items():
            w.add_scalar(f"success/{name}", rate, k)
        for skill, n in record["library"].items():
            w.add_scalar(f"library/{skill}", n, k)
        w.add_scalar("trials_total", record["trials_total"], k)
        if record["train"] is not None:
            w.add_scalar("train/best_val_loss", record["train"]["best_val_loss"], k)


def summary(
    state: RunState, tree: SkillTree, budget: Budget, pools: dict[str, int], reason: str = ""
) -> dict[str, Any]:
    """The run as it stands (``summary.json``): why it stopped, its counts, each node's status,
    latest success and run state, and the sizes of its task ``pools``."""
    return {
        "stopped": reason,
        "iterations": state.iteration,
        "trials": state.trials,
        "elapsed_s": state.elapsed_s,
        "status": dict(tree.status),
        "success": {n.name: tree.latest_success(n.name) for n in tree.nodes},
        "library": dict(state.library),
        "checkpoint": state.checkpoint,
        "nodes": {
            name: {k: v for k, v in info.items() if k != "modes"} for name, info in state.nodes.items()
        },
        "budget": asdict(budget),
        "task_pools": pools,
    }
