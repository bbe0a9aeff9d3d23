"""Redraw a run's progress plot and skill-tree picture from its ``state.json`` (live or finished).

    python scripts/plot_progress.py RUN_DIR [--out DIR]

Writes ``progress.png`` (policy success per node per iteration, mastery thresholds dashed) and
``skill_tree.png`` (each node's state) into ``--out`` (default: RUN_DIR).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robo_coevolve.evolve import plots
from robo_coevolve.evolve.run_state import RunState


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    state = RunState.load(args.run_dir)
    if state is None:
        sys.exit(f"{args.run_dir} has no state.json: no iteration has completed yet")
    for path in plots.draw_run(state.skill_tree(), args.out or args.run_dir, state.trials):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
