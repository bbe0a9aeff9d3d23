"""Pictures of a run: success per skill per iteration, and the skill tree with each node's state.

Both are drawn from the tree's progression alone (``SkillTree.to_dict()``, which ``state.json``
holds), so ``robo-coevolve-plot`` redraws them for any run directory, live or finished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a headless machine
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

COLOURS = {"locked": "#c8c8c8", "active": "#f5c242", "mastered": "#5cb85c"}


def plot_progress(
    progress: Mapping[str, Any], mastery: Mapping[str, float], path: str | Path, trials: Sequence[int] = ()
) -> Path:
    """Closed-loop policy success of every node per iteration (its mastery threshold dashed) to
    ``path``; ``trials`` (cumulative, per iteration) adds a second x axis label."""
    path = Path(path)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for k, name in enumerate(progress["nodes"]):
        h = progress["history"][name]
        colour = f"C{k}"
        if h:
            ax.plot(
                [r["iteration"] for r in h], [100 * r["success"] for r in h], "o-", color=colour, label=name
            )
        ax.axhline(100 * mastery[name], color=colour, ls="--", lw=0.8, alpha=0.7)
    ax.set_xlabel("iteration" + (f"   (trials so far: {trials[-1]:,})" if len(trials) else ""))
    ax.set_ylabel("policy success on held-out tasks (%)")
    ax.set_ylim(-2, 102)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("skill progress (dashed: mastery threshold)")
    fig.tight_layout()
    _save(fig, path)
    return path


def plot_tree(
    progress: Mapping[str, Any],
    requires: Mapping[str, Sequence[str]],
    path: str | Path,
    recipes: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """The skill tree: one box per node coloured by its status (locked, active, mastered) with
    its latest success, arrows from prerequisites; then a box per recipe (``recipes``: name ->
    ``stages``, ``mastery`` and, once evaluated, ``success`` and ``n``), a dashed arrow from its
    last stage."""
    path = Path(path)
    names = list(progress["nodes"])
    depth: dict[str, int] = {}
    for name in names:  # nodes come in dependency order
        depth[name] = 1 + max((depth[r] for r in requires[name]), default=-1)
    columns: dict[int, list[str]] = {}
    for name in names:
        columns.setdefault(depth[name], []).append(name)
    where = {}
    for d, col in columns.items():
        for i, name in enumerate(col):
            where[name] = (d, -(i - (len(col) - 1) / 2))
    recipes = dict(recipes or {})
    for i, name in enumerate(recipes):
        where[name] = (max(columns) + 1, -(i - (len(recipes) - 1) / 2))
    width = max(columns) + 1 + bool(recipes)
    height = max([len(c) for c in columns.values()] + [len(recipes)])
    fig, ax = plt.subplots(figsize=(2.6 * width + 0.5, 1.4 * height + 0.8), dpi=100)
    for name in names:
        for r in requires[name]:
            ax.annotate(
                "",
                xy=(where[name][0] - 0.32, where[name][1]),
                xytext=(where[r][0] + 0.32, where[r][1]),
                arrowprops=dict(arrowstyle="->", color="#555555", lw=1.5),
            )
    for name in names:
        status = progress["status"][name]
        h = progress["history"][name]
        label = f"{name}\n{status}" + (
            f"\n{100 * h[-1]['success']:.0f}% (it {h[-1]['iteration']})" if h else ""
        )
        x, y = where[name]
        ax.text(
            x,
            y,
            label,
            ha="center",
            va="center",
            fontsize=10,
            bbox=dict(boxstyle="round,pad=0.5", fc=COLOURS.get(status, "white"), ec="#333333"),
        )
    for name, recipe in recipes.items():
        last = recipe["stages"][-1]
        ax.annotate(
            "",
            xy=(where[name][0] - 0.42, where[name][1]),
            xytext=(where[last][0] + 0.32, where[last][1]),
            arrowprops=dict(arrowstyle="->", color="#555555", lw=1.5, ls="--"),
        )
        done = (
            f"\n{100 * recipe['success']:.0f}% of {recipe['n']}" if "success" in recipe else "\nnot yet run"
        )
        ax.text(
            *where[name],
            f"recipe {name}\n" + "\n".join(f"{i + 1}. {s}" for i, s in enumerate(recipe["stages"])) + done,
            ha="center",
            va="center",
            fontsize=9,
            bbox=dict(
                boxstyle="round,pad=0.5",
                fc=COLOURS["mastered"] if recipe.get("success") else "white",
                ec="#333333",
                ls="--",
            ),
        )
    ax.set_xlim(-0.6, width - 0.4)
    ax.set_ylim(-height / 2 - 0.1, height / 2 + 0.1)
    ax.axis("off")
    fig.tight_layout()
    _save(fig, path)
    return path


def _recipe_colour(recipe: Mapping[str, Any]) -> str:
    """Mastered once its success reaches its mastery, active once evaluated, white before."""
    if "success" not in recipe:
        return "white"
    return COLOURS["mastered" if recipe["success"] >= recipe["mastery"] else "active"]


def draw_run(
    tree, out_dir: str | Path, trials: int | None = None, evaluated: Mapping[str, Any] | None = None
) -> list[Path]:
    """``progress.png`` and ``skill_tree.png`` of a ``SkillTree`` (with its progression and its
    recipes, ``evaluated``: their latest reports by name) in ``out_dir``."""
    progress, out_dir = tree.to_dict(), Path(out_dir)
    evaluated = evaluated or {}
    recipes = {
        name: {
            "stages": list(r.stages),
            **{k: evaluated[name][k] for k in ("success", "n") if name in evaluated},
        }
        for name, r in tree.recipes.items()
    }
    return [
        plot_progress(
            progress,
            {n.name: n.mastery for n in tree.nodes},
            out_dir / "progress.png",
            [] if trials is None else [trials],
        ),
        plot_tree(progress, {n.name: n.requires for n in tree.nodes}, out_dir / "skill_tree.png", recipes),
    ]


def _save(fig, path: Path) -> None:
    """Write to a temporary name and rename, so a viewer never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.part{path.suffix}")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
