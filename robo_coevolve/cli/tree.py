"""Follow, continue and evaluate a skill-tree run.

examples:
  robo-coevolve-tree status runs/2025-01-01/12-00-00
  robo-coevolve-tree continue RUN budget=full              # resume, or go on with a larger budget
  robo-coevolve-tree evaluate RUN --tasks 100 [--checkpoint RUN/checkpoints/iter_0004]
  robo-coevolve-tree evaluate RUN --suite robustness --tasks 50 [--families push,latency]
      [--arms answer,oracle,final,clone,bc-once] [--policy NAME=DIR] [--json PATH]
  robo-coevolve-tree evaluate RUN --suite recipes [--tasks 200] [--checkpoint DIR] [--json PATH]

status checks every skill file of the run's library and prints the tree's state. continue
rebuilds the run's own config (its .hydra overrides, then yours) and resumes the loop in RUN from
its last completed iteration: a killed run picks up where it stopped, a finished one goes on down
the tree with a larger budget. Only the budget and where it runs (explore.backend, train.workers)
may differ from the run's config. evaluate runs the latest policy (or --checkpoint) on every
node's held-out tasks and writes RUN/evaluation.json. evaluate --suite robustness runs every
node's skill under each perturbation family (``robo_coevolve.evaluation.robustness``) in each arm:
the node's open-loop answer, the re-planning oracle, the final policy, the clone before practice
when the run saved one (RUN/checkpoints/iter_<k>_clone), BC once (only when --arms names it) and
each --policy; prints a table per skill and writes RUN/robustness.json (or --json). evaluate
--suite recipes runs each recipe of the run's tree (``robo_coevolve.recipe``) on held-out start
states, beside the product of its stages' latest success, writes RUN/recipes.json (or --json) and
a best and a typical failed episode to RUN/videos/recipe_<name>_{best,failure}.mp4.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import DictConfig, OmegaConf

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import RUN_MARKER, checkpoint, run_directory, saved_state
from robo_coevolve.configs import compose
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.library import SkillLibrary

if TYPE_CHECKING:
    import argparse

# --arms: the suite's arms by their short names; a --policy NAME is an arm too.
SUITE_ARMS = {
    "answer": "answer",
    "oracle": "oracle",
    "final": "final",
    "clone": "clone (no practice)",
    "bc-once": "BC once",
}
DEFAULT_ARMS = ("answer", "oracle", "final", "clone")


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
    for name, r in state.recipes.items():
        print(
            f"recipe {name} ({' -> '.join(r['stages'])}): {r['success']:.0%} of {r['n']} start states, "
            f"its stages' product {r.get('product', float('nan')):.0%} ({r['checkpoint']})"
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


def recipes_suite(args: argparse.Namespace) -> None:
    """``evaluate --suite recipes``: each recipe of the run's tree with the run's policy."""
    from robo_coevolve.atomic import write_text_atomic
    from robo_coevolve.evolve.artifacts import render_recipe_videos
    from robo_coevolve.evolve.config import VideoConfig
    from robo_coevolve.evolve.selection import recipe_seed
    from robo_coevolve.policy import VLAPolicy
    from robo_coevolve.recipe import evaluate_recipe

    if args.tasks is not None and args.tasks < 1:
        raise UsageError(f"--tasks {args.tasks}: give a whole number >= 1")
    state = saved_state(args.run_dir)
    if state is None or state.checkpoint is None:
        raise UsageError(f"{args.run_dir} has no policy checkpoint yet: let the run complete an iteration")
    tree = state.skill_tree()
    if not tree.recipes:
        raise UsageError(f"{args.run_dir}'s skill tree names no recipe: add one under skill_tree.recipes")
    policy_dir = args.checkpoint or args.run_dir / state.checkpoint
    policy = VLAPolicy.from_pretrained(policy_dir)
    seed = int(state.config.get("seed", 0))
    reports = {}
    for name, recipe in tree.recipes.items():
        stages = tree.stages(name)
        success = {s.name: tree.latest_success(s.name) for s in stages}
        report, runs = evaluate_recipe(
            policy,
            recipe,
            stages,
            recipe_seed(seed, tree, name),
            {k: v for k, v in success.items() if v is not None},
            n=args.tasks,
        )
        report["checkpoint"] = str(policy_dir)
        report["videos"] = render_recipe_videos(VideoConfig(), args.run_dir, name, stages, runs)
        reports[name] = report
        product = f"{report['product']:.0%}" if "product" in report else "- (a stage has no evaluation)"
        print(
            f"recipe {name} ({' -> '.join(recipe.stages)}): {report['success']:.0%} of {report['n']} "
            f"[{report['interval95'][0]:.0%}, {report['interval95'][1]:.0%}], its stages' product {product}; "
            f"completed {report['completed']}; failures {report['reasons']}"
        )
    out = args.json or args.run_dir / "recipes.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(reports, indent=2))
    print(f"wrote {out}")


def robustness_suite(args: argparse.Namespace) -> None:
    """``evaluate --suite robustness``: every input checked before any work."""
    from robo_coevolve.atomic import write_text_atomic
    from robo_coevolve.evaluation import bc_once, load_run
    from robo_coevolve.evaluation.perturbations import FAMILIES, family
    from robo_coevolve.evaluation.robustness import markdown, robustness
    from robo_coevolve.explore.backend import LocalBackend
    from robo_coevolve.policy import VLAPolicy

    for name in ("tasks", "oracle_trials", "bc_seeds"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} {value}: give a whole number >= 1")
    try:
        families = [family(n.strip()) for n in args.families.split(",")] if args.families else list(FAMILIES)
    except KeyError as e:
        raise UsageError(f"--families: {e.args[0]}") from None
    extra = {}
    for item in args.policy or []:
        name, sep, path = item.partition("=")
        if not sep or not name or name in SUITE_ARMS:
            raise UsageError(
                f"--policy {item!r}: give NAME=DIR with a NAME other than {', '.join(SUITE_ARMS)}"
            )
        extra[name] = checkpoint(path)
    wanted = [a.strip() for a in args.arms.split(",")] if args.arms else [*DEFAULT_ARMS, *extra]
    unknown = [a for a in wanted if a not in SUITE_ARMS and a not in extra]
    if unknown:
        raise UsageError(f"--arms {unknown}: choose from {', '.join([*SUITE_ARMS, *extra])}")
    state = saved_state(args.run_dir)
    if state is None or state.checkpoint is None:
        raise UsageError(f"{args.run_dir} has no policy checkpoint yet: let the run complete an iteration")
    run = load_run(args.run_dir)
    clones = sorted((run.dir / "checkpoints").glob("iter_*_clone"))
    if "clone" in wanted and not clones:
        if args.arms:
            raise UsageError(f"--arms clone: {run.dir}/checkpoints holds no iter_<k>_clone (no practice ran)")
        wanted.remove("clone")

    def bc(node) -> list:
        first = run.first_iteration(node.name)
        return bc_once(run, node.skill, first, run.policy(first).config, range(args.bc_seeds or 1))[0]

    paths = {"final": args.checkpoint or run.dir / state.checkpoint, **extra}
    if clones:
        paths["clone"] = clones[-1]
    plans = [SUITE_ARMS[a] for a in wanted if a in ("answer", "oracle")]
    policies = {}
    for arm in wanted:
        if arm == "bc-once":
            policies[SUITE_ARMS[arm]] = bc
        elif arm in paths:
            policy = VLAPolicy.from_pretrained(paths[arm])
            policies[SUITE_ARMS.get(arm, arm)] = lambda node, p=policy: [p]
    with LocalBackend(control_hz=run.control_hz) as backend:
        report = robustness(
            run, backend, families, plans, policies, tasks=args.tasks or 50, oracle_trials=args.oracle_trials
        )
    print(markdown(report, focus="final" if "final" in policies else next(iter(policies), "final")))
    out = args.json or run.dir / "robustness.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(report, indent=2))
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
    p.add_argument(
        "--tasks",
        type=int,
        help="held-out tasks per node (default: each node's eval_tasks), or per family for the suite (50)",
    )
    p.add_argument("--checkpoint", type=checkpoint, help="policy directory (default: the run's latest)")
    p.add_argument(
        "--suite",
        choices=("nodes", "robustness", "recipes"),
        default="nodes",
        help="nodes: the policy on each node's tasks; robustness: the perturbation suite; recipes: the "
        "tree's recipes",
    )
    p.add_argument("--families", help="robustness: comma-separated families (default: all)")
    p.add_argument(
        "--arms", help=f"robustness: comma-separated arms of {', '.join(SUITE_ARMS)} and --policy names"
    )
    p.add_argument(
        "--policy", action="append", metavar="NAME=DIR", help="robustness: one more policy arm (repeatable)"
    )
    p.add_argument("--oracle-trials", type=int, default=32, help="robustness: the oracle's trials per task")
    p.add_argument("--bc-seeds", type=int, help="robustness: BC once clones per node (default 1)")
    p.add_argument(
        "--json",
        type=Path,
        help="robustness, recipes: the report's path (default RUN/robustness.json, recipes.json)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    if args.command == "status":
        status(args.run_dir)
    elif args.command == "continue":
        continue_run(args.run_dir, args.overrides)
    elif args.suite == "robustness":
        robustness_suite(args)
    elif args.suite == "recipes":
        recipes_suite(args)
    else:
        evaluate(args.run_dir, args.tasks, args.checkpoint)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
