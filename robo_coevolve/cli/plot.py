"""Redraw a run's progress plot and skill-tree picture from its state.json (live or finished).

examples:
  robo-coevolve-plot RUN                 # RUN/progress.png and RUN/skill_tree.png
  robo-coevolve-plot RUN --out figures/

progress.png shows the policy's success per node per iteration (mastery thresholds dashed),
skill_tree.png each node's state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import run_directory, saved_state
from robo_coevolve.evolve import plots
from robo_coevolve.evolve.run_state import STATE_FILE


@command
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="robo-coevolve-plot", description=__doc__)
    parser.add_argument("run_dir", type=run_directory, help="the run's directory (its hydra.run.dir)")
    parser.add_argument("--out", type=Path, help="directory of the pictures (default: RUN_DIR)")
    args = parser.parse_args(argv)
    state = saved_state(args.run_dir)
    if state is None:
        raise UsageError(
            f"{args.run_dir} has no {STATE_FILE}: no iteration has completed yet, plot it after the first"
        )
    for path in plots.draw_run(state.skill_tree(), args.out or args.run_dir, state.trials, state.recipes):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
