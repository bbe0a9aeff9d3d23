"""Export a skill library as one robomimic dataset (HDF5), ready for robomimic's training scripts.

The file has robomimic's layout: ``data`` (attrs ``total``, ``env_args``) with ``demo_0 ..
demo_<N-1>`` (attr ``num_samples``; ``actions``, ``rewards``, ``dones``, ``states``, ``obs/*``,
``next_obs/*``), the chosen skills' demos renumbered in skill then insertion order, and filter
keys under ``mask``: ``train`` and ``valid`` (a seeded random split) and one per skill. Each demo
also carries attrs ``skill``, ``instruction`` and ``task`` (TaskSpec JSON) for language- or
task-conditioned training.
"""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np

from robo_coevolve.atomic import file_aside
from robo_coevolve.library.skill_library import SkillLibrary, chosen_skills, env_args

ROBOMIMIC_DATASETS = (
    "actions",
    "rewards",
    "dones",
    "states",
    "obs/proprio",
    "obs/egg",
    "next_obs/proprio",
    "next_obs/egg",
)


def export_robomimic(
    library: SkillLibrary,
    path: str | Path,
    skills: list[str] | None = None,
    valid_fraction: float = 0.1,
    seed: int = 0,
) -> Path:
    """Write the demos of ``skills`` (default: all the library has) to ``path``; returns it.

    ``valid_fraction`` of the demos (at least one when there are two or more and the fraction is
    positive) go to ``mask/valid``, the rest to ``mask/train``. The file is written to a temporary
    name and renamed into place, so ``path`` is never half-written.
    """
    path = Path(path)
    if not 0.0 <= valid_fraction < 1.0:
        raise ValueError(f"valid_fraction={valid_fraction} must be in [0, 1)")
    skills = chosen_skills(library, skills)
    rates = {m["control_hz"] for s in skills for m in library.metadata(s)}
    if len(rates) > 1:
        raise ValueError(
            f"skills {skills} run at different control rates {sorted(rates)} Hz: a robomimic file "
            "describes one env, so export them separately"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_aside(path) as tmp:
        with h5py.File(tmp, "w") as out:
            data = out.create_group("data")
            names: dict[str, list[str]] = {}
            total = 0
            for skill in skills:
                names[skill] = []
                with h5py.File(library.path(skill), "r") as src:
                    demos = src["data"]
                    for i in range(len(demos)):
                        demo = demos[f"demo_{i}"]
                        target = f"demo_{len(data)}"
                        group = data.create_group(target)
                        for key in ROBOMIMIC_DATASETS:
                            src.copy(demo[key], group, name=key)
                        group.attrs["num_samples"] = int(demo.attrs["num_samples"])
                        group.attrs["skill"] = skill
                        group.attrs["instruction"] = demo.attrs["instruction"]
                        group.attrs["task"] = demo.attrs["task"]
                        total += int(demo.attrs["num_samples"])
                        names[skill].append(target)
            data.attrs["total"] = total
            data.attrs["env_args"] = json.dumps(
                env_args(skills[0] if len(skills) == 1 else None, rates.pop())
            )
            everything = [n for skill in skills for n in names[skill]]
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(everything))
            n_valid = round(valid_fraction * len(everything))
            if valid_fraction > 0 and len(everything) > 1:
                n_valid = max(1, n_valid)
            valid = sorted(order[:n_valid])
            train = sorted(order[n_valid:])
            mask = out.create_group("mask")
            masks = {"train": [everything[i] for i in train], "valid": [everything[i] for i in valid]}
            masks.update(names)
            for key, demo_names in masks.items():
                mask.create_dataset(key, data=np.array(demo_names, dtype="S"))
    return path
