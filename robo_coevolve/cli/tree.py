"""Follow, continue and evaluate a skill-tree run.

examples:
  robo-coevolve-tree status runs/2025-01-01/12-00-00
  robo-coevolve-tree continue RUN budget=full              # resume, or go on with a larger budget
  robo-coevolve-tree evaluate RUN --tasks 100 [--checkpoint RUN/checkpoints/iter_0004]

status checks every skill file of the run's library and prints the tree's state. continue
rebuilds the run's own config (its .hydra overrides, then yours) and resumes the loop in RUN from
its last completed iteration: a killed run picks up where it stopped, a finished one goes on down
the tree with a larger budget. Only the budget and where it runs (explore.backend, train.workers)
may differ from the run's config. evaluate runs the latest policy (or --checkpoint) on every
node's held-out tasks and writes RUN/evaluation.json.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import RUN_MARKER, checkpoint, run_directory, saved_state
from robo_coevolve.configs import compose
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.library import SkillLibrary


def open_run(run_dir: Path) -> tuple[RunState | None, dict[str, int]]:
    """The run's saved state (None before its first iteration) and its library's segment counts,
    every skill file checked (a damaged one raises ``LibraryError``)."""
    library = run_dir / "library"
    counts = SkillLibrary(library, create=False).verify() if library.is_dir() else {}
    return saved_state(run_dir), counts


def run_config(run_dir: Path, overrides: list[str]) -> DictConfig:
    """The run's config: its saved command-line overrides with ``overrides`` replacing any of the
    same key."""
    saved = [str(o) for o in OmegaConf.load(run_dir / RUN_MARKER)]
    keys = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    merged = [o for o in saved if o.split("=", 1)[0].lstrip("+~") not in keys and not o.startswith("hydra.")]
    return compose(*merged, *overrides)


def workspace(run_dir: Path, overrides: list[str]):
    """The run's ``EvolveWorkspace``, its config rebuilt with ``overrides``, built as the main job
    builds it."""
    import hydra

    cfg = run_config(run_dir, overrides)
    return hydra.utils.instantiate(cfg.workspace, cfg=cfg, output_dir=run_dir, _recursive_=False)


def status(run_dir: Path) -> None:
    state, library = open_run(run_dir)
    if state is None:
        print(f"{run_dir}: no completed iteration yet   library (every file checked): {library}")
        return
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
    print(f"library (every file checked): {library}   checkpoint: {state.checkpoint}")
    if library:  # runs compare by the library's content digest (a resumed run's equals a clean one's)
        print(f"library digest: {SkillLibrary(run_dir / 'library', create=False).digest()}")


def continue_run(run_dir: Path, overrides: list[str]) -> None:
    open_run(run_dir)
    workspace(run_dir, overrides).run()


def evaluate(run_dir: Path, tasks: int | None, policy_dir: Path | None) -> None:
    from robo_coevolve.learn import evaluate_policy
    from robo_coevolve.policy import VLAPolicy

    state = saved_state(run_dir)
    if policy_dir is None:
        if state is None or state.checkpoint is None:
            raise UsageError(f"{run_dir} has no policy checkpoint yet: give --checkpoint DIR")
        policy_dir = run_dir / state.checkpoint
    policy = VLAPolicy.from_pretrained(policy_dir)
    ws = workspace(run_dir, [])
    results = {}
    with ws.backend() as backend:
        for node in ws.tree.nodes:
            n = tasks or node.eval_tasks
            ev = evaluate_policy(policy, node.distribution(), backend, n, seed=10_000)
            results[node.name] = ev.summary()
            print(f"{node.name:12} {ev.success_rate:6.0%} over {n} tasks  failures: {ev.reasons}")
    out = run_dir / "evaluation.json"
    out.write_text(json.dumps({"checkpoint": str(policy_dir), "nodes": results}, indent=2))
    print(f"wrote {out}")


@command
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="robo-coevolve-tree", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_help = "the run's directory (its hydra.run.dir)"
    p = sub.add_parser("status", help="check the library; the tree's state and each node's latest success")
    p.add_argument("run_dir", type=run_directory, help=run_help)
    p = sub.add_parser("continue", help="resume or extend the run")
    p.add_argument("run_dir", type=run_directory, help=run_help)
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. budget=full budget.iterations=40")
    p = sub.add_parser("evaluate", help="evaluate a checkpoint on every node; writes RUN/evaluation.json")
    p.add_argument("run_dir", type=run_directory, help=run_help)
    p.add_argument("--tasks", type=int, help="held-out tasks per node (default: each node's eval_tasks)")
    p.add_argument("--checkpoint", type=checkpoint, help="policy directory (default: the run's latest)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    if args.command == "status":
        status(args.run_dir)
    elif args.command == "continue":
        continue_run(args.run_dir, args.overrides)
    else:
        evaluate(args.run_dir, args.tasks, args.checkpoint)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
