"""What the refiner keeps of real exploration, per skill: successes -> gentle -> efficient ->
smoothed segments that still succeed on replay -> novel ones stored in a skill library.

For each skill a primitive search (``--budget`` trials, seed 0) produces the trials; the
refiner (default settings, ``conf/refine/default.yaml``) runs on all of its successes in
batches of one generation each, against a library that grows as it goes, so the novelty gate sees
what earlier generations already stored. Jerk is the mean squared jerk of the executed blade
motion (``refine.smoothing.mean_squared_jerk``) of the same windows before and after smoothing.
A second pass with ``smooth=False`` shows what smoothing itself costs in survivors.

    python -m benchmarks.explore refine [--skills scoop flip catch] [--budget 1500] [--out DIR] [--json F]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from robo_coevolve.evaluation import table, write_json
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.search import PrimitiveSearch
from robo_coevolve.library import SkillLibrary
from robo_coevolve.refine import Refiner
from robo_coevolve.refine.novelty import distances
from robo_coevolve.task_distribution import TaskDistribution


def refine_into(library: SkillLibrary, skill: str, generations: list, refiner: Refiner) -> dict:
    totals: dict[str, float] = {}
    before, after = [], []
    start = time.perf_counter()
    for trajs in generations:
        bank = [m["meta"]["features"] for m in library.metadata(skill)]
        segments, report = refiner.refine(trajs, np.array(bank) if bank else None)
        library.add(segments)
        for k, v in report.summary().items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
        before += report.jerk_before
        after += report.jerk_after
    totals["seconds"] = time.perf_counter() - start
    totals["jerk_before"] = float(np.mean(before)) if before else float("nan")
    totals["jerk_after"] = float(np.mean(after)) if after else float("nan")
    feats = np.array([m["meta"]["features"] for m in library.metadata(skill)])
    pairs = [distances(f, feats[i + 1 :]) for i, f in enumerate(feats[:-1])]
    totals["diversity"] = float(np.mean(np.concatenate(pairs))) if pairs else float("nan")
    totals["stored"] = library.count(skill)
    return totals


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--skills", nargs="+", default=["scoop", "flip", "catch"])
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--out", help="keep the libraries here (default: a temporary directory)")
    parser.add_argument("--json", help="also write the rows here")


def run(args: argparse.Namespace) -> None:
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="refine_report_"))

    rows = []
    with LocalBackend() as backend:
        for skill in args.skills:
            generations: list = []
            PrimitiveSearch(TaskDistribution.for_skill(skill), backend, seed=0, population=100).run(
                args.budget, on_generation=lambda gen, trajs, store=generations: store.append(trajs)
            )
            for smooth in (True, False):
                refiner = Refiner(smooth=smooth)
                lib = SkillLibrary(out / f"{skill}_{'smoothed' if smooth else 'raw'}")
                rows.append((skill, smooth, refine_into(lib, skill, generations, refiner)))
                refiner.close()

    print(f"Refiner on primitive-search trials ({args.budget} per skill, refined one generation at a time)")
    columns = ["skill", "smoothing", "trials", "successes", "gentle", "efficient", "survive replay"]
    columns += ["stored (novel)", "duplicates", "jerk before", "jerk after", "diversity", "time"]
    lines = []
    for skill, smooth, t in rows:
        survive = f"{t['survived']:.0f} / {t['replayed']:.0f} ({t['survived'] / max(t['replayed'], 1):.0%})"
        lines.append(
            [skill, "savgol 9/3" if smooth else "none"]
            + [f"{t[k]:.0f}" for k in ("trials", "successes", "gentle", "efficient")]
            + [
                survive,
                t["stored"],
                f"{t['duplicates']:.0f}",
                f"{t['jerk_before']:,.0f}",
                f"{t['jerk_after']:,.0f}",
            ]
            + [f"{t['diversity']:.2f}", f"{t['seconds']:.0f} s"]
        )
    print(table(columns, lines, left=2))
    print(f"\nlibraries in {out}")
    write_json(args.json, [{"skill": skill, "smoothing": smooth, **t} for skill, smooth, t in rows])
