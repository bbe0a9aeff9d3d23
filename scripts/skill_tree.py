"""Follow, continue and evaluate a skill-tree run.

    python scripts/skill_tree.py status RUN_DIR
    python scripts/skill_tree.py continue RUN_DIR [OVERRIDE ...]    e.g. budget=full
    python scripts/skill_tree.py evaluate RUN_DIR [--tasks 100] [--checkpoint DIR]

``continue`` rebuilds the run's own config (its ``.hydra`` overrides, then yours) and resumes the
loop in RUN_DIR from its last completed iteration: a killed run picks up where it stopped, a
finished one goes on down the tree with a larger budget. Only the budget and where it runs
(``explore.backend``, ``train.workers``) may differ from the run's config. ``evaluate`` runs the
latest policy (or ``--checkpoint``) on every node's held-out tasks and writes ``evaluation.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from robo_coevolve.evolve.run_state import RunState  # noqa: E402
from robo_coevolve.library import LibraryError, SkillLibrary  # noqa: E402
from robo_coevolve.resources import conf_dir  # noqa: E402


def run_config(run_dir: Path, overrides: list[str]) -> DictConfig:
    """The run's config: its saved command-line overrides with ``overrides`` replacing any of the
    same key."""
    saved_path = run_dir / ".hydra" / "overrides.yaml"
    if not saved_path.is_file():
        sys.exit(f"{run_dir} is not a robo_coevolve run directory (no .hydra/overrides.yaml)")
    saved = [str(o) for o in OmegaConf.load(saved_path)]
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    merged = [o for o in saved if o.split("=", 1)[0].lstrip("+~") not in keys and not o.startswith("hydra.")]
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        return compose("config", overrides=merged + overrides)


def status(run_dir: Path) -> int:
    state = RunState.load(run_dir)
    if state is None:
        print(f"{run_dir}: no completed iteration yet")
        return 0
    tree = state.tree
    print(
        f"{run_dir}: {state.iteration} iteration(s), {state.trials:,} trials, {state.elapsed_s / 60:.1f} min"
    )
    print(f"{'node':12} {'status':9} {'latest success':>15} {'iterations':>11} {'trials':>8}")
    for name in tree["nodes"]:
        h = tree["history"][name]
        latest = f"{h[-1]['success']:.0%} (it {h[-1]['iteration']})" if h else "-"
        info = state.nodes[name]
        print(
            f"{name:12} {tree['status'][name]:9} {latest:>15} {info['iterations']:>11} {info['trials']:>8,}"
        )
    print(f"library: {state.library}   checkpoint: {state.checkpoint}")
    if (run_dir / "library").is_dir():  # runs compare by content digest
        try:
            print(f"library digest: {SkillLibrary(run_dir / 'library', create=False).digest()}")
        except LibraryError as e:
            sys.exit(str(e))
    return 0


def continue_run(run_dir: Path, overrides: list[str]) -> int:
    from robo_coevolve.workspace.evolve import EvolveWorkspace

    cfg = run_config(run_dir, overrides)
    EvolveWorkspace(cfg, run_dir, **_workspace_args(cfg)).run()
    return 0


def evaluate(run_dir: Path, tasks: int | None, checkpoint: Path | None) -> int:
    from robo_coevolve.learn import evaluate_policy
    from robo_coevolve.policy import VLAPolicy
    from robo_coevolve.workspace.evolve import EvolveWorkspace

    cfg = run_config(run_dir, [])
    workspace = EvolveWorkspace(cfg, run_dir, **_workspace_args(cfg))
    state = RunState.load(run_dir)
    if checkpoint is None:
        if state is None or state.checkpoint is None:
            sys.exit(f"{run_dir} has no policy checkpoint yet: give --checkpoint DIR")
        checkpoint = run_dir / state.checkpoint
    policy = VLAPolicy.from_pretrained(checkpoint)
    results = {}
    with workspace.backend() as backend:
        for node in workspace.tree.nodes:
            n = tasks or node.eval_tasks
            ev = evaluate_policy(policy, node.distribution(), backend, n, seed=10_000)
            results[node.name] = ev.summary()
            print(f"{node.name:12} {ev.success_rate:6.0%} over {n} tasks  failures: {ev.reasons}")
    out = run_dir / "evaluation.json"
    out.write_text(json.dumps({"checkpoint": str(checkpoint), "nodes": results}, indent=2))
    print(f"wrote {out}")
    return 0


def _workspace_args(cfg: DictConfig) -> dict:
    w = OmegaConf.to_container(cfg.workspace, resolve=True)
    w.pop("_target_", None)
    return w


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="the tree's state and each node's latest success")
    p.add_argument("run_dir", type=Path)
    p = sub.add_parser("continue", help="resume or extend the run in RUN_DIR")
    p.add_argument("run_dir", type=Path)
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. budget=full budget.iterations=40")
    p = sub.add_parser("evaluate", help="evaluate a checkpoint on every node")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--tasks", type=int, help="held-out tasks per node (default: each node's eval_tasks)")
    p.add_argument("--checkpoint", type=Path, help="policy directory (default: the run's latest)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    if not args.run_dir.is_dir():
        sys.exit(f"no run directory {args.run_dir}")
    if args.command == "status":
        return status(args.run_dir)
    if args.command == "continue":
        return continue_run(args.run_dir, args.overrides)
    return evaluate(args.run_dir, args.tasks, args.checkpoint)


if __name__ == "__main__":
    sys.exit(main())
