"""Render a trial to mp4, with the scorer's view of every step written over the frames.

The trial is re-simulated from its initial state and actions (``trajectory.replay``), so any saved
trajectory renders, from any camera and at any size. The overlay shows the skill, time, the egg's
phase (on pan, on blade, in air, ...), the running integrity and peak force, and whether the
success condition holds at that step; the last frames show the final verdict.

Command line: ``robo-coevolve-render trial TRIAL.npz [--camera side]`` (``robo_coevolve.cli.render``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.scoring import PHASES
from robo_coevolve.trajectory import Trajectory


def overlay(frame: np.ndarray, lines: list[str], colour=(255, 255, 255)) -> np.ndarray:
    """``frame`` with ``lines`` of text in a dark box at its top left."""
    image = Image.fromarray(frame)
    size = max(12, frame.shape[0] // 28)
    font = ImageFont.load_default(size=size)
    draw = ImageDraw.Draw(image, "RGBA")
    pad, height = size // 2, int(size * 1.3)
    width = max(int(draw.textlength(line, font=font)) for line in lines) + 2 * pad
    draw.rectangle([0, 0, width, len(lines) * height + pad], fill=(0, 0, 0, 150))
    for i, line in enumerate(lines):
        draw.text((pad, pad // 2 + i * height), line, font=font, fill=colour)
    return np.asarray(image)


def step_overlays(traj: Trajectory, env: EggFlipEnv) -> list[list[str]]:
    """Overlay text for each control step of ``traj`` (scored with ``env``'s scorer)."""
    record = env.physics.record(traj.sensors)
    events = env.scorer.events(record)
    lines = []
    for t in range(len(traj)):
        prefix = {k: v[: t + 1] for k, v in record.items()}
        holds = env.scorer.outcome(traj.task.skill, prefix).success
        lines.append(
            [
                f"{traj.task.skill}: {traj.task.instruction}",
                f"t {(t + 1) / traj.control_hz:5.2f} s   phase: {PHASES[events['phase'][t]]}",
                f"integrity {events['integrity'][t]:.2f}   force {np.nan_to_num(events['force'][t]):5.1f} N",
                f"success {'holds' if holds else 'not yet'}",
            ]
        )
    return lines


def stage_overlays(name: str, stages: Sequence, switches: Sequence[int]) -> Callable:
    """Overlays for a recipe episode (``recipe.RecipeRun``): the stage and its instruction, then
    time, phase, integrity and force, for each control step."""

    def texts(traj: Trajectory, env: EggFlipEnv) -> list[list[str]]:
        events = env.scorer.events(env.physics.record(traj.sensors))
        force = np.nan_to_num(events["force"])
        lines = []
        for t in range(len(traj)):
            i = min(sum(t >= s for s in switches), len(switches) - 1)
            lines.append(
                [
                    f"{name}, stage {i + 1}/{len(stages)}: {stages[i].name}",
                    f'"{stages[i].instruction}"',
                    f"t {(t + 1) / traj.control_hz:5.2f} s   phase: {PHASES[events['phase'][t]]}",
                    f"integrity {events['integrity'][t]:.2f}   force {force[t]:5.1f} N",
                ]
            )
        return lines

    return texts


def render_trial(
    traj: Trajectory,
    path: str | Path,
    camera: str = "overview",
    size: tuple[int, int] = (480, 360),
    frame_every: int = 2,
    tail_s: float = 1.0,
    overlays: Callable[[Trajectory, EggFlipEnv], list[list[str]]] | None = None,
    verdict: tuple[bool, str] | None = None,
) -> Path:
    """Replay ``traj`` and write an mp4 to ``path``; returns the path.

    ``frame_every`` control steps make one frame (2 at 50 Hz gives a 25 fps video); the last frame
    is held ``tail_s`` s with the final verdict. ``overlays`` makes each step's text (default
    ``step_overlays``) and ``verdict`` is (success, reason) (default the trajectory's outcome):
    a recipe passes its stages' (``stage_overlays``) and its own.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    env = EggFlipEnv(task=traj.task, control_hz=traj.control_hz, render_size=size, render_camera=camera)
    try:
        texts = (overlays or step_overlays)(traj, env)
        first = texts[0] if overlays else texts[0][:3] + ["success not yet"]
        fps = traj.control_hz / frame_every
        env.reset_to_state(traj.initial_state, traj.disturbance, task=traj.task)
        tmp = path.with_name(path.stem + ".part" + path.suffix)
        with imageio.get_writer(tmp, fps=fps, codec="libx264", quality=7, macro_block_size=8) as writer:
            writer.append_data(overlay(env.render_frame(), first))
            frame = None
            for t, action in enumerate(traj.actions):
                env.step(action)
                if t % frame_every == frame_every - 1 or t == len(traj) - 1:
                    frame = overlay(env.render_frame(), texts[t])
                    writer.append_data(frame)
            success, reason = verdict or (traj.outcome["success"], traj.outcome["reason"])
            colour = (120, 255, 120) if success else (255, 140, 120)
            said = f"{'SUCCESS' if success else 'FAILED'}: {reason}"
            last = overlay(env.render_frame(), texts[-1][:3] + [said], colour)
            for _ in range(max(1, int(tail_s * fps))):
                writer.append_data(last)
        tmp.replace(path)
    finally:
        env.close()
    return path


def pick_highlights(trajs: list[Trajectory]) -> dict[str, Trajectory]:
    """The batch's ``best`` trial (the success with the largest margin, else the failure that came
    closest) and a ``failure`` typical of it (of the most common failure reason, the trial with
    the median progress); either is missing when the batch has none."""
    picks: dict[str, Trajectory] = {}
    if trajs:
        picks["best"] = max(trajs, key=lambda t: (t.success, t.outcome["margin"], t.outcome["progress"]))
    failures = [t for t in trajs if not t.success]
    if failures:
        reasons = Counter(t.outcome["reason"] for t in failures)
        common = [t for t in failures if t.outcome["reason"] == reasons.most_common(1)[0][0]]
        common.sort(key=lambda t: t.outcome["progress"])
        picks["failure"] = common[len(common) // 2]
    return picks


def render_highlights(
    trajs: list[Trajectory],
    out_dir: str | Path,
    prefix: str = "",
    camera: str = "overview",
    size: tuple[int, int] = (480, 360),
    frame_every: int = 2,
) -> dict[str, Path]:
    """Render the best and a typical failed trial of a batch (``pick_highlights``) to
    ``out_dir/<prefix>best.mp4`` and ``<prefix>failure.mp4``; returns the paths written."""
    return {
        name: render_trial(traj, Path(out_dir) / f"{prefix}{name}.mp4", camera, size, frame_every)
        for name, traj in pick_highlights(trajs).items()
    }
