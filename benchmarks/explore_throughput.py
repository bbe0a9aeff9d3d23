"""Explorer throughput against raw ``mujoco.rollout`` on the same scene, measured in one run.

1. **Open-loop trials** (random motion primitives on tasks drawn from the skill's distribution:
   egg pose +-2 cm, mass +-20%). The explorer, ``LocalBackend(workers).run_trials``, does all of a
   trial: draws the start state, builds the primitive, simulates it with ``mujoco.rollout``,
   reduces and scores the record and builds the ``Trajectory``. The reference is the bare physics
   of the very same trials: one ``mujoco.rollout.Rollout(nthread=workers)`` call on the same
   per-trial models, start states, warm starts and controls, with nothing else around it.
   "Physics fraction" = explorer physics steps/s / raw steps/s, at the same worker count.
2. **Scaling**: 2 workers against 1, for the explorer and for the raw reference.
3. **Closed-loop episodes** of the random-init MLP policy with pink noise
   (``LocalBackend.run_policy``: processes, one batched policy call per step per worker), 1 and
   2 workers, after a warm-up batch so the processes have started.

Compared measurements run interleaved (A, B, A, B, ...) and each figure is the median of its rounds.

    python benchmarks/explore_throughput.py [--trials 96] [--rounds 3] [--skill scoop] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime

os.environ.setdefault("MUJOCO_GL", "egl")

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
from mujoco import rollout  # noqa: E402

from robo_coevolve.explore import primitives  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.closed_loop import PolicyEpisode  # noqa: E402
from robo_coevolve.explore.noise import NoiseSpec  # noqa: E402
from robo_coevolve.explore.open_loop import OpenLoopSimulator, Trial  # noqa: E402
from robo_coevolve.explore.plans import PrimitivePlan  # noqa: E402
from robo_coevolve.explore.random_policy import RandomMLPPolicy  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS
CONTROL = mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_XFRC_APPLIED


def make_trials(skill: str, n: int, seed: int) -> list[Trial]:
    rng = np.random.default_rng(seed)
    tasks = TaskDistribution.for_skill(skill).sample_many(rng, n)
    return [Trial(t, PrimitivePlan(p)) for t, p in zip(tasks, primitives.sample(rng, n), strict=True)]


def raw_inputs(trials: list[Trial]):
    """Per-trial models, start states, warm starts and full-horizon controls, as the explorer
    would hand them to mujoco.rollout."""
    sim = OpenLoopSimulator()
    models, states, warm, controls = [], [], [], []
    for trial in trials:
        env = sim.env_for(trial.task)
        obs, _ = env.reset(seed=trial.task.seed, options={"task": trial.task})
        m, d = env.physics.model, env.physics.data
        state = np.empty(mujoco.mj_stateSize(m, FULL))
        mujoco.mj_getState(m, d, state, FULL)
        poses = env.action_to_pose(trial.plan.actions(obs, env))
        control = np.zeros((len(poses) * env.substeps, m.nu + 6 * m.nbody))
        control[:, : m.nu] = np.repeat(poses, env.substeps, axis=0)
        models.append(copy.copy(m))
        states.append(state)
        warm.append(d.qacc_warmstart.copy())
        controls.append(control)
    sim.close()
    return models, np.stack(states), np.stack(warm), np.stack(controls)


def median_rates(units: dict, rounds: int) -> dict[str, float]:
    """Median items/s per unit over interleaved rounds; a unit returns (items, seconds)."""
    rates: dict[str, list[float]] = {k: [] for k in units}
    for _ in range(rounds):
        for name, unit in units.items():
            items, seconds = unit()
            rates[name].append(items / seconds)
    return {k: statistics.median(v) for k, v in rates.items()}


def timed(fn):
    start = time.perf_counter()
    items = fn()
    return items, time.perf_counter() - start


def bench_open_loop(skill: str, n_trials: int, rounds: int, workers=(1, 2)) -> dict:
    """Explorer trials/s (``LocalBackend(w).run_trials``) and raw ``mujoco.rollout`` trials/s on the
    very same trials, per worker count, interleaved: ``{"explorer 1": ..., "raw 1": ..., ...}``
    plus ``steps_per_trial``."""
    trials = make_trials(skill, n_trials, seed=0)
    models, states, warm, controls = raw_inputs(trials)
    backends = {w: LocalBackend(workers=w) for w in workers}
    pools = {w: rollout.Rollout(nthread=w) for w in workers}
    datas = [mujoco.MjData(models[0]) for _ in range(max(workers))]

    def explorer(w):
        return lambda: timed(lambda: len(backends[w].run_trials(trials)))

    def raw(w):
        def run():
            pools[w].rollout(
                models, datas[:w], states, controls, control_spec=CONTROL, initial_warmstart=warm
            )
            return len(trials)

        return lambda: timed(run)

    for w in workers:  # warm-up: thread pools, env caches
        backends[w].run_trials(trials[:8])
    units = {}
    for w in workers:
        units[f"explorer {w}"], units[f"raw {w}"] = explorer(w), raw(w)
    rates = median_rates(units, rounds)
    for b in backends.values():
        b.close()
    for p in pools.values():
        p.close()
    return {**rates, "steps_per_trial": controls.shape[1], "trials": len(trials)}


def policy_episodes_for(skill: str, n: int) -> list[PolicyEpisode]:
    rng = np.random.default_rng(1)
    return [
        PolicyEpisode(t, NoiseSpec("pink", 0.2), noise_seed=i)
        for i, t in enumerate(TaskDistribution.for_skill(skill).sample_many(rng, n))
    ]


def bench_closed_loop(skill: str, n_episodes: int, rounds: int, workers=(1, 2)) -> dict:
    """Control steps/s of random-init-policy episodes (``LocalBackend(w).run_policy``) per worker
    count, after a warm-up batch that starts the processes: ``{"policy 1": ..., "policy 2": ...}``."""
    policy = RandomMLPPolicy(seed=0)
    episodes = policy_episodes_for(skill, n_episodes)
    closed = {w: LocalBackend(workers=w, policy_batch=max(1, n_episodes // (2 * w))) for w in workers}
    for w in workers:
        closed[w].run_policy(policy, episodes[:4])  # start the worker processes

    def policy_run(w):
        return lambda: timed(lambda: sum(len(t) for t in closed[w].run_policy(policy, episodes)))

    rates = median_rates({f"policy {w}": policy_run(w) for w in workers}, rounds)
    for b in closed.values():
        b.close()
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skill", default="scoop")
    parser.add_argument("--trials", type=int, default=96, help="open-loop trials per measurement")
    parser.add_argument("--episodes", type=int, default=32, help="closed-loop episodes per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    open_loop = bench_open_loop(args.skill, args.trials, args.rounds)
    steps_per_trial = open_loop.pop("steps_per_trial")
    n_trials = open_loop.pop("trials")
    trial_rates = open_loop
    physics_steps = n_trials * steps_per_trial
    env_steps = int(round(make_trials(args.skill, 1, seed=0)[0].task.horizon * 50))  # control steps at 50 Hz
    ctrl_rates = bench_closed_loop(args.skill, args.episodes, args.rounds)
    episodes = policy_episodes_for(args.skill, args.episodes)
    trials = range(n_trials)

    figures = {
        "skill": args.skill,
        "trials": len(trials),
        "physics_steps_per_trial": steps_per_trial,
        **{f"{k} trials/s": v for k, v in trial_rates.items()},
        **{f"{k} physics steps/s": v * steps_per_trial for k, v in trial_rates.items()},
        "physics fraction 1 worker": trial_rates["explorer 1"] / trial_rates["raw 1"],
        "physics fraction 2 workers": trial_rates["explorer 2"] / trial_rates["raw 2"],
        "explorer scaling 2/1": trial_rates["explorer 2"] / trial_rates["explorer 1"],
        "raw scaling 2/1": trial_rates["raw 2"] / trial_rates["raw 1"],
        **{f"{k} ctrl steps/s": v for k, v in ctrl_rates.items()},
        "policy scaling 2/1": ctrl_rates["policy 2"] / ctrl_rates["policy 1"],
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, mujoco {mujoco.__version__}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }

    print(
        f"Open-loop {args.skill} trials ({len(trials)} per run, {steps_per_trial} physics steps each, {physics_steps:,} in all)"
    )
    print(
        "| workers | explorer trials/s | explorer phys steps/s | raw mujoco.rollout phys steps/s | physics fraction |"
    )
    print("|--:|--:|--:|--:|--:|")
    for w in (1, 2):
        e, r = trial_rates[f"explorer {w}"], trial_rates[f"raw {w}"]
        print(
            f"| {w} | {e:,.1f} | {e * steps_per_trial / 1e3:,.1f}k | {r * steps_per_trial / 1e3:,.1f}k | {e / r:.0%} |"
        )
    print(
        f"\nScaling 2 workers / 1: explorer {figures['explorer scaling 2/1']:.2f}x, "
        f"raw rollout {figures['raw scaling 2/1']:.2f}x"
    )
    print(f"\nClosed-loop episodes, random-init MLP + pink noise ({len(episodes)} episodes per run)")
    print("| workers | control steps/s | physics steps/s |")
    print("|--:|--:|--:|")
    for w in (1, 2):
        c = ctrl_rates[f"policy {w}"]
        print(f"| {w} | {c:,.0f} | {c * steps_per_trial / env_steps / 1e3:,.1f}k |")
    print(f"Scaling 2 workers / 1: {figures['policy scaling 2/1']:.2f}x")
    print(f"\n{figures['machine']}; {figures['date']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
