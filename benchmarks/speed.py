"""The benchmark suite: every speed and learning figure of the toolkit in one table, in a few minutes.

One command (``make bench``) so that a change's effect on any figure is one run away, and every
figure sits beside a reference measured in the same run on the same work, so the ratios hold on
a busy or a different machine even when the absolute numbers move. It reuses the measurements
of ``benchmarks.env_throughput`` and ``benchmarks.explore_throughput`` (run those for their fuller
tables) and adds Ray against the local backend, behaviour-cloning speed (one clone, and clones
trained at once), inference speed, practice (residual PPO) against its own rollouts, and the time the primitive search takes to master scoop and flip.

    python -m benchmarks.speed [--quick] [--skip-ray] [--json results.json]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks import env_throughput, explore_throughput, practice_throughput  # noqa: E402
from robo_coevolve.evaluation import table, write_json  # noqa: E402
from robo_coevolve.explore.backend import LocalBackend  # noqa: E402
from robo_coevolve.explore.search import PrimitiveSearch, SearchConfig, evaluate_params  # noqa: E402
from robo_coevolve.learn import BCTrainer, ChunkDataset, CloneJob, TrainConfig, fit_clones  # noqa: E402
from robo_coevolve.policy import PolicyConfig, VLAPolicy  # noqa: E402
from robo_coevolve.task_distribution import TaskDistribution  # noqa: E402


def rows_physics(seconds: float, rounds: int) -> list[list[str]]:
    out = []
    for skill in ("scoop", "flip"):
        r = env_throughput.bench_physics(skill, 0, seconds, rounds, 0.2)
        same = "same final qpos" if all(r["same_trajectory"].values()) else "TRAJECTORIES DIFFER"
        out.append(
            [
                f"env physics steps/s ({skill}, scripted motion)",
                f"{r['env_physics_steps_per_s']:,.0f}",
                f"raw `mj_step` Python loop, same model and controls: {r['raw_python_physics_steps_per_s']:,.0f}",
                f"{r['physics_fraction_vs_python_loop']:.0%} ({same})",
            ]
        )
    return out


def rows_render(seconds: float, rounds: int) -> list[list[str]]:
    out = []
    for size in (64, 128):
        r = env_throughput.bench_render(size, 0, seconds, rounds, 0.2)
        out.append(
            [
                f"policy frames/s, {size}x{size} fast",
                f"{r['fast_frames_per_s']:,.0f}",
                f"pretty (shadows, reflections): {r['pretty_frames_per_s']:,.1f}",
                f"{r['speedup']:.1f}x",
            ]
        )
    return out


def rows_explorer(trials: int, episodes: int, rounds: int) -> list[list[str]]:
    r = explore_throughput.bench_open_loop("scoop", trials, rounds)
    c = explore_throughput.bench_closed_loop("scoop", episodes, rounds)
    out = [
        [
            f"explorer trials/s, {w} worker{'s' * (w > 1)} (open loop, scoop)",
            f"{r[f'explorer {w}']:,.1f}",
            f"raw `mujoco.rollout`, {w} thread{'s' * (w > 1)}, same trials: {r[f'raw {w}']:,.1f}",
            f"{r[f'explorer {w}'] / r[f'raw {w}']:.0%}",
        ]
        for w in (1, 2)
    ]
    out.append(
        [
            "explorer scaling 1 -> 2 workers (open loop)",
            f"{r['explorer 2'] / r['explorer 1']:.2f}x",
            f"raw `mujoco.rollout` 1 -> 2 threads: {r['raw 2'] / r['raw 1']:.2f}x",
            f"{(r['explorer 2'] / r['explorer 1']) / (r['raw 2'] / r['raw 1']):.0%}",
        ]
    )
    out.append(
        [
            "policy episodes, control steps/s, 2 worker processes (closed loop)",
            f"{c['policy 2']:,.0f}",
            f"1 worker: {c['policy 1']:,.0f}",
            f"{c['policy 2'] / c['policy 1']:.2f}x",
        ]
    )
    return out


def rows_ray(trials: int, rounds: int) -> list[list[str]]:
    """The same batch through LocalBackend(2) and RayBackend(2) on a local Ray instance."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from robo_coevolve.explore.ray_backend import RayBackend

    batch = explore_throughput.make_trials("scoop", trials, seed=1)
    temp = tempfile.mkdtemp(prefix="rc_ray_", dir="/tmp")
    start = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
    ray_start = time.perf_counter() - start
    try:
        with LocalBackend(workers=2) as local, RayBackend(workers=2) as remote:
            start = time.perf_counter()
            got = remote.run_trials(batch[:4])  # starts the actors (each builds its MuJoCo models)
            actors_start = time.perf_counter() - start
            local.run_trials(batch[:4])
            expected = local.run_trials(batch)
            got = remote.run_trials(batch)
            same = all(
                np.array_equal(a.sensors, b.sensors) and a.outcome == b.outcome
                for a, b in zip(got, expected, strict=True)
            )
            rates = explore_throughput.median_rates(
                {
                    "local": lambda: explore_throughput.timed(lambda: len(local.run_trials(batch))),
                    "ray": lambda: explore_throughput.timed(lambda: len(remote.run_trials(batch))),
                },
                rounds,
            )
    finally:
        ray.shutdown()
    return [
        [
            "Ray trials/s, 2 actors (open loop, scoop)",
            f"{rates['ray']:,.1f}",
            f"LocalBackend, 2 threads, same batch: {rates['local']:,.1f}",
            f"{rates['ray'] / rates['local']:.0%} ({'same trajectories' if same else 'TRAJECTORIES DIFFER'})",
        ],
        [
            "Ray start-up: `ray.init` local instance + 2 actors",
            f"{ray_start:.1f} s + {actors_start:.1f} s",
            "-",
            "-",
        ],
    ]


def synthetic_dataset(n: int, chunk: int, rng: np.random.Generator) -> ChunkDataset:
    """Random arrays of the library's shapes (speed only: nothing is learnt from them)."""
    return ChunkDataset(
        proprio=rng.normal(0, 0.1, (n, 15)).astype(np.float32),
        egg=rng.normal(0, 0.1, (n, 13)).astype(np.float32),
        instruction=["scoop up the egg"] * n,
        deltas=rng.normal(0, 0.01, (n, chunk, 5)).astype(np.float32),
        mask=np.ones((n, chunk), np.float32),
        segment_index=np.arange(n) // 100,
        time=rng.uniform(0, 3, n).astype(np.float32),
    )


def rows_learner(steps: int) -> list[list[str]]:
    """BC samples/s against a bare forward/backward/step loop on one fixed batch of the same model."""
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True))
    data = synthetic_dataset(20_000, policy.config.chunk, np.random.default_rng(0))
    config = TrainConfig(steps=steps, eval_every=steps, progress=False)
    fit = BCTrainer(policy, config).fit(data)
    trainer_rate = fit["history"][-1]["samples_per_s"]
    batch = data.batch(np.arange(config.batch_size))
    optimiser = torch.optim.AdamW(policy.parameters(), lr=config.lr)
    policy.train()
    start = time.perf_counter()
    for _ in range(steps):
        loss = policy.loss(batch)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    raw_rate = steps * config.batch_size / (time.perf_counter() - start)
    return [
        [
            f"BC training samples/s (state policy, batch {config.batch_size}, synthetic data)",
            f"{trainer_rate:,.0f}",
            f"bare forward/backward/AdamW on one fixed batch: {raw_rate:,.0f}",
            f"{trainer_rate / raw_rate:.0%}",
        ]
    ]


def rows_clones(steps: int, workers: int = 2) -> list[list[str]]:
    """``workers`` clones trained at once (``fit_clones``, a process each, start-up included)
    against the same jobs one after another in this process; the weights must come back equal."""

    def jobs() -> list[CloneJob]:
        data = synthetic_dataset(20_000, PolicyConfig().chunk, np.random.default_rng(0))
        out = []
        for seed in range(workers):
            torch.manual_seed(seed)
            policy = VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True))
            config = TrainConfig(steps=steps, eval_every=steps, progress=False, seed=seed)
            out.append(CloneJob(policy, torch.get_rng_state(), config, data))
        return out

    start = time.perf_counter()
    serial = fit_clones(jobs(), workers=1)
    serial_s = time.perf_counter() - start
    start = time.perf_counter()
    parallel = fit_clones(jobs(), workers=workers)
    parallel_s = time.perf_counter() - start
    same = all(
        all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
        for (a, _), (b, _) in zip(serial, parallel, strict=True)
    )
    return [
        [
            f"{workers} BC clones trained at once, {workers} worker processes ({steps} steps each)",
            f"{parallel_s:.1f} s",
            f"the same clones one after another, in this process: {serial_s:.1f} s",
            f"{serial_s / parallel_s:.2f}x ({'same weights' if same else 'WEIGHTS DIFFER'})",
        ]
    ]


def rows_inference(repeats: int) -> list[list[str]]:
    """predict_chunk (one re-plan; ``act`` re-plans every 4 steps) in torch vs the ONNX export."""
    from robo_coevolve.policy import export

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, config in (
            ("state", dict(use_image=False, use_egg_state=True)),
            ("image 64x64", dict(use_image=True, use_egg_state=False)),
        ):
            torch.manual_seed(0)
            policy = VLAPolicy(PolicyConfig(**config)).eval()
            session = export.onnx_session(export.export_onnx(policy, Path(tmp) / "p.onnx"))
            for batch in (1, 16):
                obs = export.example_observation(policy, batch, np.random.default_rng(batch))
                error = export.check_parity(policy, session, obs)
                t = export.latency(policy, session, obs, repeats)
                out.append(
                    [
                        f"policy inference, {name}, batch {batch}: torch `predict_chunk`",
                        f"{t['torch_s'] * 1e3:.2f} ms",
                        f"ONNX export in onnxruntime: {t['onnxruntime_s'] * 1e3:.2f} ms (max diff {error:.0e})",
                        f"onnx {t['torch_s'] / t['onnxruntime_s']:.1f}x faster",
                    ]
                )
    return out


def rows_mastery(budget: int, target: float) -> list[list[str]]:
    """Trials and wall time until the search's best mode holds ``target`` (the main job's settings)."""
    e = SearchConfig()  # the main job's search settings
    cem = e.cem
    out = []
    with LocalBackend() as backend:
        for k, skill in enumerate(("scoop", "flip")):
            tasks = TaskDistribution.for_skill(skill)
            start = time.perf_counter()
            search = PrimitiveSearch(
                tasks, backend, seed=1000 * k, population=e.population, keep_successes=False, **cem
            )
            result = search.run(budget, target=target, patience=e.patience, select_trials=e.select_trials)
            seconds = time.perf_counter() - start
            held = evaluate_params(result.best_params, tasks, backend, 100, seed=1000 * k + 500)
            held_out = float(np.mean([t.success for t in held]))
            reached = result.trials < budget
            prior = result.history[0].success_rate  # generation 0 samples the uniform prior
            out.append(
                [
                    f"time to mastery, {skill} (search to {target:.0%}, budget {budget:,})",
                    f"{seconds:.0f} s, {result.trials:,} trials" + ("" if reached else " (budget spent)"),
                    f"random primitives (its first generation): {prior:.0%} success",
                    f"answer {held_out:.0%} on 100 held-out tasks",
                ]
            )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter measurements (noisier figures)")
    parser.add_argument("--skip-ray", action="store_true", help="leave out Ray (when it is not installed)")
    parser.add_argument("--budget", type=int, default=3000, help="trial cap of each mastery search")
    parser.add_argument("--target", type=float, default=0.9, help="success rate that counts as mastered")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    seconds, rounds = (0.6, 3) if args.quick else (1.5, 3)
    trials = 48 if args.quick else 96
    torch.set_num_threads(1)  # as in the explorer's workers; and the figures do not fight for cores

    started = time.perf_counter()
    sections: list[tuple[str, list[list[str]]]] = []

    def section(name: str, fn, *a) -> None:
        t = time.perf_counter()
        sections.append((name, fn(*a)))
        print(f"[{time.perf_counter() - t:5.1f} s] {name}", file=sys.stderr, flush=True)

    section("env", rows_physics, seconds, rounds)
    section("render", rows_render, seconds, rounds)
    section("explorer", rows_explorer, trials, 16 if args.quick else 32, rounds)
    if not args.skip_ray:
        section("ray", rows_ray, trials, rounds)
    section("learner", rows_learner, 100 if args.quick else 300)
    section("clones", rows_clones, 300 if args.quick else 1000)
    section("inference", rows_inference, 50 if args.quick else 200)
    section("practice", practice_throughput.rows_throughput, 64 if args.quick else 128)
    section("mastery", rows_mastery, args.budget, args.target)
    total = time.perf_counter() - started

    m = env_throughput.machine()
    print(
        f"\nmachine: {m['cpu']}, nproc={m['nproc']}, no GPU, python {m['python']}, mujoco {m['mujoco']}, "
        f"torch {torch.__version__} (1 thread), MUJOCO_GL={m['mujoco_gl']}; {m['date']}; total {total:.0f} s; "
        f"load average at the end {os.getloadavg()[0]:.1f} (above nproc: other work shared the cores)\n"
    )
    columns = ["figure", "value", "reference measured in the same run", "ratio"]
    print(table(columns, [row for _, rows in sections for row in rows]))
    write_json(args.json, {"machine": m, "total_s": total, "sections": dict(sections)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
