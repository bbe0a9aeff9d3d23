"""Render a policy checkpoint's closed-loop episodes to mp4, with the scorer's overlay.

    python scripts/render_policy.py CHECKPOINT_DIR --skill scoop [--episodes 3] [--out videos/]
        [--instruction "flip the fried egg over"] [--seed 0] [--camera overview] [--size 480 360]

Each episode runs the policy without noise on a seeded task of the skill's default distribution
(egg pose +-2 cm, mass +-20%); ``--instruction`` prompts it with another instruction than the
skill's own (to watch whether the instruction steers it). Prints each episode's outcome.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402

from robo_coevolve.explore.closed_loop import PolicyEpisode, run_policy_episodes  # noqa: E402
from robo_coevolve.policy import PolicyConfigError, VLAPolicy  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402
from robo_coevolve.task_spec import SKILLS  # noqa: E402
from robo_coevolve.video import render_trial  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a directory written by VLAPolicy.save_pretrained")
    parser.add_argument("--skill", choices=SKILLS, required=True)
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--instruction", help="prompt instead of the skill's own instruction")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("videos"))
    parser.add_argument("--camera", default="overview")
    parser.add_argument("--size", type=int, nargs=2, default=[480, 360], metavar=("W", "H"))
    parser.add_argument("--frame-every", type=int, default=2, help="control steps per frame")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")
    try:
        policy = VLAPolicy.from_pretrained(args.checkpoint)
    except PolicyConfigError as e:
        sys.exit(str(e))
    tasks = TaskDistribution.for_skill(args.skill).sample_many(
        np.random.default_rng(args.seed), args.episodes
    )
    if args.instruction:
        tasks = [t.replace(instruction=args.instruction) for t in tasks]
    trajs = run_policy_episodes(
        policy, [PolicyEpisode(t) for t in tasks], control_hz=policy.config.control_hz
    )
    for i, traj in enumerate(trajs):
        path = render_trial(
            traj, args.out / f"{args.skill}_{i}.mp4", args.camera, tuple(args.size), args.frame_every
        )
        verdict = "success" if traj.success else f"failed: {traj.outcome['reason']}"
        print(f"{path}: {verdict} (integrity {traj.outcome['integrity']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
