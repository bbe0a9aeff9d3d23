"""Render a policy checkpoint's closed-loop episodes, or a saved trial, to mp4 with the scorer's overlay.

examples:
  robo-coevolve-render policy RUN/checkpoints/iter_0004 --skill flip --episodes 3 --out videos/
  robo-coevolve-render policy CKPT --skill flip --instruction "scoop the egg"   # does the prompt steer it?
  robo-coevolve-render trial trial.npz --camera side                            # writes trial.mp4

policy runs the checkpoint without noise on seeded tasks of the skill's default distribution
(egg pose +-2 cm, mass +-20%) and prints each episode's outcome; --instruction prompts it with
another instruction than the skill's own. trial replays a trajectory saved by Trajectory.save.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from robo_coevolve.cli.errors import ArgumentParser, UsageError, command
from robo_coevolve.cli.inputs import checkpoint
from robo_coevolve.task_spec import SKILLS
from robo_coevolve.video import render_trial


def render_policy(args) -> None:
    import numpy as np

    from robo_coevolve.explore.closed_loop import PolicyEpisode, run_policy_episodes
    from robo_coevolve.policy import VLAPolicy
    from robo_coevolve.task_distribution import TaskDistribution

    if args.episodes < 1:
        raise UsageError(f"--episodes {args.episodes}: give at least 1")
    tasks = TaskDistribution.for_skill(args.skill).sample_many(
        np.random.default_rng(args.seed), args.episodes
    )
    if args.instruction:
        tasks = [t.replace(instruction=args.instruction) for t in tasks]  # TaskSpec checks it
    policy = VLAPolicy.from_pretrained(args.checkpoint)
    trajs = run_policy_episodes(
        policy, [PolicyEpisode(t) for t in tasks], control_hz=policy.config.control_hz
    )
    for i, traj in enumerate(trajs):
        path = render_trial(
            traj, args.out / f"{args.skill}_{i}.mp4", args.camera, tuple(args.size), args.frame_every
        )
        verdict = "success" if traj.success else f"failed: {traj.outcome['reason']}"
        print(f"{path}: {verdict} (integrity {traj.outcome['integrity']:.2f})")


def render_saved_trial(args) -> None:
    from robo_coevolve.trajectory import Trajectory

    if not args.trial.is_file():
        raise UsageError(f"trial {args.trial} does not exist: give a .npz written by Trajectory.save")
    traj = Trajectory.load(args.trial)
    out = render_trial(
        traj, args.out or args.trial.with_suffix(".mp4"), args.camera, tuple(args.size), args.frame_every
    )
    print(f"{out}  ({traj.task.skill}: {traj.outcome['reason']})")


def add_video_options(parser: ArgumentParser) -> None:
    parser.add_argument("--camera", default="overview", help="overview, side or policy")
    parser.add_argument("--size", type=int, nargs=2, default=[480, 360], metavar=("W", "H"))
    parser.add_argument("--frame-every", type=int, default=2, help="control steps per frame")


@command
def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="robo-coevolve-render", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("policy", help="a policy checkpoint's closed-loop episodes")
    p.add_argument("checkpoint", type=checkpoint, help="a directory written by VLAPolicy.save_pretrained")
    p.add_argument("--skill", choices=SKILLS, required=True)
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--instruction", help="prompt instead of the skill's own instruction")
    p.add_argument("--seed", type=int, default=0, help="seed of the tasks")
    p.add_argument("--out", type=Path, default=Path("videos"), help="directory of the videos")
    add_video_options(p)
    p.set_defaults(run=render_policy)

    p = sub.add_parser("trial", help="a saved trial (.npz)")
    p.add_argument("trial", type=Path, help="trajectory file written by Trajectory.save")
    p.add_argument("--out", type=Path, help="mp4 path (default: next to the trial)")
    add_video_options(p)
    p.set_defaults(run=render_saved_trial)

    args = parser.parse_args(argv)
    args.run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
