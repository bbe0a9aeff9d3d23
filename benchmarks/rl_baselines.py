"""PPO and SAC (stable-baselines3) on the dense reward of scoop and flip, beside the project's loop.

The question a user with their own RL algorithm asks first: how does off-the-shelf RL do here,
against ``python -m robo_coevolve``? Each run trains one algorithm on one skill with one seed
for a wall-clock budget (a callback stops it at the deadline), on ``robo_coevolve/<Skill>-v0``
with ``reward_type="dense"``, every episode a fresh task of the skill tree node's distribution
(``conf/skill_tree/egg_flip.yaml``, what the loop trains and evaluates on). The trained model is
then run deterministically on ``--eval-tasks`` held-out tasks (task ``i`` drawn with seed
``EVAL_SEED + i``, a stream neither training nor the loop's evaluation draws from) and judged by
the env's success predicate: ``info["outcome"]["success"]`` on the episode's last step (the
egg falling off terminates early and fails).

Hyper-parameters: SB3's defaults (the MuJoCo continuous-control settings of the PPO and SAC
papers), changed only as is usual for MuJoCo (rl-baselines3-zoo):

- both: ``gamma`` 0.99, also given to the env as the shaping's discount (potential-based shaping
  leaves the optimal policy unchanged only at the learner's discount); the ``Dict`` observation
  flattened for an ``MlpPolicy``; one torch thread per run, on the CPU;
- PPO: 4 envs x ``n_steps`` 512 (SB3's 2048-step rollout, spread over 4 tasks at a time), batch
  64, 10 epochs, learning rate 3e-4, and ``VecNormalize`` of observations and rewards, as the zoo
  does for MuJoCo: the observation mixes metres, radians and velocities of tens of rad/s, and
  normalised returns keep the value loss in scale;
- SAC: 1 env, ``learning_starts`` 10,000 uniform random steps first (the zoo's MuJoCo setting;
  ``--learning-starts``), buffer 1e6, batch 256, one gradient step per env step, automatic
  entropy; no normalisation (as the zoo).

The loop's reference (its time to mastery and held-out success of the same skills) is not
measured here, which would take too long: it is read from a finished run (``--loop-run RUN``:
time to mastery of a node = the sum of ``metrics.jsonl``'s iteration ``seconds`` up to the
iteration that mastered it) or given (``--loop-minutes scoop=1.4 --loop-success scoop=1.0``),
and the output says which. Compare on the same cores.

    python benchmarks/rl_baselines.py --algos ppo sac --skills scoop flip --seeds 0 1 2 \\
        --minutes scoop=6 flip=20 --eval-tasks 100 --jobs 2 --loop-run RUN --json out.json

Runs go ``--jobs`` at a time (one core each), seed by seed; the JSON is rewritten after every
finished run, so a long measurement leaves its results as it goes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

from robo_coevolve import SKILL_ENV_IDS  # noqa: E402
from robo_coevolve.resources import conf_dir  # noqa: E402
from robo_coevolve.skill_tree import SkillTree  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402

ALGOS = ("ppo", "sac")
SKILLS = ("scoop", "flip")
EVAL_SEED = 424_242  # held-out task i is drawn with EVAL_SEED + i
GAMMA = 0.99
PPO_ENVS = 4
PPO_KWARGS = dict(n_steps=2048 // PPO_ENVS, batch_size=64, n_epochs=10, learning_rate=3e-4, gae_lambda=0.95)
SAC_KWARGS = dict(buffer_size=1_000_000, batch_size=256, learning_rate=3e-4, tau=0.005, train_freq=1)
CURVE_POINTS = 10  # learning-curve points per run
RECENT = 100  # training episodes a curve point averages over


# ------------------------------------------------------------------------------------ the env
class TaskDraws(gymnasium.Wrapper):
    """Each reset starts a fresh task of ``tasks`` (egg mass, start pose and reset seed), drawn
    from a generator that ``reset(seed=...)`` re-seeds."""

    def __init__(self, env: gymnasium.Env, tasks: TaskDistribution):
        super().__init__(env)
        self.tasks = tasks
        self.rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        task = self.tasks.sample(self.rng)
        return self.env.reset(seed=task.seed, options={**(options or {}), "task": task})


def node_tasks(skill: str) -> TaskDistribution:
    """The task distribution of the skill tree's node for ``skill`` (the loop's)."""
    nodes = yaml.safe_load((conf_dir() / "skill_tree" / "egg_flip.yaml").read_text())["nodes"]
    return SkillTree.from_config(nodes).node(skill).distribution()


def make_env(skill: str) -> gymnasium.Env:
    """The skill's registered env with the dense reward, drawing node tasks, observation flattened."""
    env = gymnasium.make(SKILL_ENV_IDS[skill], reward_type="dense", gamma=GAMMA)
    return gymnasium.wrappers.FlattenObservation(TaskDraws(env, node_tasks(skill)))


# ------------------------------------------------------------------------------- one run
def deadline_callback(seconds: float):
    """An SB3 callback that stops training after ``seconds`` of wall clock and keeps a learning
    curve: success rate, dense return and peak progress of the last training episodes."""
    from stable_baselines3.common.callbacks import BaseCallback  # SB3 and torch load only to train

    class Deadline(BaseCallback):
        def _on_training_start(self) -> None:
            self.start = time.perf_counter()
            self.next_point = seconds / CURVE_POINTS
            self.curve: list[dict[str, float]] = []
            self.episodes = 0
            self.success, self.returns, self.progress = (deque(maxlen=RECENT) for _ in range(3))
            self.peak = np.zeros(self.training_env.num_envs)

        def _on_step(self) -> bool:
            for i, (done, info) in enumerate(zip(self.locals["dones"], self.locals["infos"], strict=True)):
                self.peak[i] = max(self.peak[i], info["potential"])
                if done:
                    self.episodes += 1
                    self.success.append(float(info["outcome"]["success"]))
                    self.returns.append(float(info["episode"]["r"]))
                    self.progress.append(self.peak[i])
                    self.peak[i] = 0.0
            elapsed = time.perf_counter() - self.start
            if elapsed >= self.next_point or elapsed >= seconds:
                self.next_point += seconds / CURVE_POINTS
                self.curve.append(self.point(elapsed))
            return elapsed < seconds

        def point(self, elapsed: float) -> dict[str, float]:
            mean = lambda xs: float(np.mean(xs)) if xs else None  # noqa: E731 (None: no episode yet)
            return {
                "minutes": elapsed / 60,
                "env_steps": int(self.num_timesteps),
                "episodes": self.episodes,
                "success": mean(self.success),
                "return": mean(self.returns),
                "peak_progress": mean(self.progress),
            }

    return Deadline()


def evaluate(model, skill: str, n: int, normalize=None) -> dict[str, Any]:
    """Deterministic episodes of ``model`` on held-out tasks 0..n-1: success rate and reasons."""
    env = make_env(skill)
    outcomes = []
    try:
        for i in range(n):
            obs, _ = env.reset(seed=EVAL_SEED + i)
            done = False
            while not done:
                x = normalize.normalize_obs(obs) if normalize is not None else obs
                action, _ = model.predict(x, deterministic=True)
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            outcomes.append(info["outcome"])
    finally:
        env.close()
    return {
        "success": float(np.mean([o["success"] for o in outcomes])),
        "tasks": n,
        "reasons": dict(Counter(o["reason"] for o in outcomes)),
    }


def train_and_evaluate(
    algo: str, skill: str, seed: int, minutes: float, eval_tasks: int, learning_starts: int
):
    """Train ``algo`` on ``skill`` for ``minutes`` of wall clock, then evaluate it on held-out tasks."""
    import torch
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)
    print(f"[{algo} {skill} seed {seed}] training for {minutes:g} min", file=sys.stderr, flush=True)
    normalize = None
    if algo == "ppo":
        venv = make_vec_env(make_env, PPO_ENVS, seed=seed, env_kwargs={"skill": skill})
        venv = normalize = VecNormalize(venv, gamma=GAMMA)
        model = PPO("MlpPolicy", venv, gamma=GAMMA, seed=seed, device="cpu", **PPO_KWARGS)
    else:
        venv = make_vec_env(make_env, 1, seed=seed, env_kwargs={"skill": skill})
        model = SAC(
            "MlpPolicy",
            venv,
            gamma=GAMMA,
            learning_starts=learning_starts,
            seed=seed,
            device="cpu",
            **SAC_KWARGS,
        )
    callback = deadline_callback(minutes * 60)
    start = time.perf_counter()
    model.learn(total_timesteps=10**12, callback=callback)
    train_seconds = time.perf_counter() - start
    for point in callback.curve:
        if point["success"] is not None:
            print(
                f"[{algo} {skill} seed {seed}] {point['minutes']:5.1f} min {point['env_steps']:>8} steps: "
                f"train success {point['success']:.0%}, return {point['return']:+.3f}, "
                f"peak progress {point['peak_progress']:.2f}",
                file=sys.stderr,
                flush=True,
            )
    if normalize is not None:
        normalize.training = False
    start = time.perf_counter()
    held_out = evaluate(model, skill, eval_tasks, normalize)
    venv.close()
    print(
        f"[{algo} {skill} seed {seed}] held-out success {held_out['success']:.0%}",
        file=sys.stderr,
        flush=True,
    )
    return {
        "algo": algo,
        "skill": skill,
        "seed": seed,
        "budget_minutes": minutes,
        "train_minutes": train_seconds / 60,
        "env_steps": int(model.num_timesteps),
        "held_out": held_out,
        "eval_minutes": (time.perf_counter() - start) / 60,
        "curve": callback.curve,
    }


# ------------------------------------------------------------------------ the loop's figures
def loop_from_run(run: Path, skills: list[str]) -> dict[str, dict[str, Any]]:
    """Per skill: the run's minutes to mastery (iteration seconds summed up to the mastering
    one) and its held-out success then; unmastered skills give the run's minutes and last success."""
    metrics = run / "metrics.jsonl"
    if not metrics.is_file():
        raise SystemExit(
            f"--loop-run {run}: no metrics.jsonl there; give a run directory of python -m robo_coevolve"
        )
    found: dict[str, dict[str, Any]] = {}
    latest: dict[str, float] = {}
    seconds = 0.0
    for line in metrics.read_text().splitlines():
        row = json.loads(line)
        seconds += row["seconds"]
        latest.update({k: v for k, v in row["success"].items() if v is not None})
        node = row["node"]
        if node in skills and node not in found and row["mastered"]:
            found[node] = {"minutes": seconds / 60, "success": latest.get(node), "mastered": True}
    for skill in skills:
        if skill not in found:
            found[skill] = {"minutes": seconds / 60, "success": latest.get(skill), "mastered": False}
    return found


def key_values(pairs: list[str], option: str) -> dict[str, float]:
    """``["scoop=1.4", ...]`` as ``{"scoop": 1.4}``; a malformed pair exits with one line."""
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        try:
            out[key] = float(value)
        except ValueError:
            sep = ""
        if not sep or key not in SKILLS:
            raise SystemExit(f"{option} {pair!r}: write SKILL=NUMBER with SKILL one of {', '.join(SKILLS)}")
    return out


def budgets(values: list[str], skills: list[str]) -> dict[str, float]:
    """``--minutes 6`` (every skill) or ``--minutes scoop=6 flip=20`` (one per skill)."""
    if len(values) == 1 and "=" not in values[0]:
        try:
            return dict.fromkeys(skills, float(values[0]))
        except ValueError:
            raise SystemExit(f"--minutes {values[0]!r}: give a number or SKILL=NUMBER pairs") from None
    given = key_values(values, "--minutes")
    missing = [s for s in skills if s not in given]
    if missing:
        raise SystemExit(f"--minutes has no budget for {', '.join(missing)}: add {missing[0]}=MINUTES")
    return {s: given[s] for s in skills}


# ------------------------------------------------------------------------------- the report
def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean held-out success, minutes and env steps per (algo, skill) over its seeds."""
    out = []
    for algo in ALGOS:
        for skill in SKILLS:
            group = [r for r in runs if r["algo"] == algo and r["skill"] == skill]
            if not group:
                continue
            rates = [r["held_out"]["success"] for r in group]
            out.append(
                {
                    "algo": algo,
                    "skill": skill,
                    "seeds": sorted(r["seed"] for r in group),
                    "success_mean": statistics.fmean(rates),
                    "success_sd": statistics.stdev(rates) if len(rates) > 1 else 0.0,
                    "train_minutes_mean": statistics.fmean(r["train_minutes"] for r in group),
                    "env_steps_mean": statistics.fmean(r["env_steps"] for r in group),
                }
            )
    return out


def table(report: dict[str, Any]) -> str:
    """The markdown table: each run, the mean per (algo, skill), and the loop's reference."""
    lines = [
        "| method | skill | seed | held-out success | train minutes | env steps |",
        "|---|---|---|--:|--:|--:|",
    ]
    for r in sorted(report["runs"], key=lambda r: (SKILLS.index(r["skill"]), r["algo"], r["seed"])):
        lines.append(
            f"| {r['algo'].upper()} | {r['skill']} | {r['seed']} | {r['held_out']['success']:.0%} "
            f"| {r['train_minutes']:.1f} | {r['env_steps']:,} |"
        )
    for s in report["summary"]:
        seeds = ",".join(map(str, s["seeds"]))
        lines.append(
            f"| **{s['algo'].upper()} mean** | {s['skill']} | {seeds} | "
            f"**{s['success_mean']:.0%}** ± {s['success_sd']:.0%} | {s['train_minutes_mean']:.1f} "
            f"| {s['env_steps_mean']:,.0f} |"
        )
    loop = report["loop"]
    for skill, ref in loop["skills"].items():
        success = "-" if ref.get("success") is None else f"{ref['success']:.0%}"
        minutes = "-" if ref.get("minutes") is None else f"{ref['minutes']:.1f}"
        label = "to mastery" if ref.get("mastered", True) else "not mastered"
        lines.append(f"| loop ({label}) | {skill} | - | {success} | {minutes} | - |")
    lines.append("")
    lines.append(
        f"Held-out: {report['eval_tasks']} tasks per run, task i drawn with seed {EVAL_SEED} + i, "
        "deterministic actions. Loop reference: " + loop["source"] + "."
    )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    p.add_argument("--skills", nargs="+", choices=SKILLS, default=list(SKILLS))
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--minutes", nargs="+", default=["6"], help="training budget per run: M or SKILL=M ...")
    p.add_argument("--eval-tasks", type=int, default=100)
    p.add_argument("--learning-starts", type=int, default=10_000, help="SAC's random steps before learning")
    p.add_argument("--jobs", type=int, default=1, help="runs at once, one core each")
    p.add_argument("--loop-run", type=Path, help="a python -m robo_coevolve run directory (metrics.jsonl)")
    p.add_argument("--loop-minutes", nargs="+", default=[], help="SKILL=MINUTES: the loop's time to mastery")
    p.add_argument("--loop-success", nargs="+", default=[], help="SKILL=RATE: the loop's held-out success")
    p.add_argument("--json", type=Path, help="write everything here (rewritten after every run)")
    args = p.parse_args(argv)
    if args.eval_tasks < 1 or args.jobs < 1:
        p.error("--eval-tasks and --jobs must be at least 1")
    if args.loop_run and (args.loop_minutes or args.loop_success):
        p.error("give the loop's figures either with --loop-run or with --loop-minutes/--loop-success")
    return args


def loop_reference(args: argparse.Namespace) -> dict[str, Any]:
    if args.loop_run:
        return {
            "source": f"read from run {args.loop_run} (metrics.jsonl), not measured in this run",
            "skills": loop_from_run(args.loop_run, args.skills),
        }
    minutes = key_values(args.loop_minutes, "--loop-minutes")
    success = key_values(args.loop_success, "--loop-success")
    if not minutes and not success:
        return {"source": "none given (--loop-run or --loop-minutes)", "skills": {}}
    skills = {s: {"minutes": minutes.get(s), "success": success.get(s)} for s in args.skills}
    return {"source": "given on the command line, not measured in this run", "skills": skills}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    minutes = budgets(args.minutes, args.skills)
    report: dict[str, Any] = {
        "command": " ".join([Path(sys.argv[0]).name, *(sys.argv[1:] if argv is None else argv)]),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "nproc": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "settings": {
            "gamma": GAMMA,
            "ppo": {**PPO_KWARGS, "n_envs": PPO_ENVS, "vec_normalize": True},
            "sac": {**SAC_KWARGS, "n_envs": 1, "learning_starts": args.learning_starts},
            "budget_minutes": minutes,
        },
        "eval_seed": EVAL_SEED,
        "eval_tasks": args.eval_tasks,
        "loop": loop_reference(args),
        "runs": [],
    }
    jobs = [
        (algo, skill, seed, minutes[skill], args.eval_tasks, args.learning_starts)
        for seed in args.seeds
        for skill in args.skills
        for algo in args.algos
    ]

    def finished(run: dict[str, Any]) -> None:
        report["runs"].append(run)
        report["summary"] = summarize(report["runs"])
        report["machine"]["load_average_at_end"] = os.getloadavg()
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))

    if args.jobs == 1:
        for job in jobs:
            finished(train_and_evaluate(*job))
    else:
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.jobs, mp_context=spawn) as pool:
            for future in as_completed([pool.submit(train_and_evaluate, *job) for job in jobs]):
                finished(future.result())
    print(table(report))
    return report


if __name__ == "__main__":
    main()
