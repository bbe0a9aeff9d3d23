"""Throughput of the egg-flip env against raw MuJoCo and of policy-frame rendering, measured in one run.

Every figure is printed beside a reference measured in the same process, so that the ratios hold on
any machine even when the absolute numbers do not:

1. ``EggFlipEnv(skill=...).step()`` running each skill's scripted motion: control steps/s and the
   physics steps/s they imply (``env.substeps`` per control step), against ``mujoco.mj_step(model,
   data)`` called from a Python loop on the same model, from the same initial state, with the same
   controls held for ``substeps`` steps each ("physics fraction" = env / raw), and against
   ``mujoco.mj_step(model, data, nstep=substeps)`` (the loop in C).
2. The same with uniform random actions and the default observation, for each skill's id
   (``robo_coevolve/Scoop-v0``, ...) and, measured the same way in the same run, gymnasium's
   ``HalfCheetah-v5`` and ``Ant-v5``: ``env.step()`` (of the unwrapped env, resets not timed) against
   ``mj_step`` replaying the controls the env wrote, ``frame_skip``/``substeps`` steps each.
3. The season scene's salt: the scripted season's controls replayed with ``mj_step(nstep=substeps)``
   on the scene with the shaker and its grains against the same scene without them (the egg and
   the spatula start where they did), so the ratio is what the grains cost.
4. Policy-frame renders/s with the fast settings (``pretty=False``) against the pretty ones at the same
   size, and the env's full ``step()`` with ``image_size=64`` against the same env without an image.

Measurements that are compared are interleaved in rounds (A, B, A, B, ...) and each figure is the
median over its rounds, so that a slow moment of a shared machine does not land on one side only.
Physics figures count the CPU time of the benchmark's thread by default (``--clock cpu``: other
processes on a shared machine then do not count); rendering, which runs in the GL driver's threads,
counts wall time.

    python benchmarks/env_throughput.py [--seconds 1.5] [--rounds 3] [--clock cpu] [--json results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

os.environ.setdefault("MUJOCO_GL", "egl")

import gymnasium  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

from robo_coevolve import SKILL_ENV_IDS, SKILLS  # noqa: E402
from robo_coevolve.env.egg_flip import EggFlipEnv  # noqa: E402
from robo_coevolve.env.physics import SPATULA_JOINTS, build_model  # noqa: E402
from robo_coevolve.env.rendering import SceneRenderer  # noqa: E402
from robo_coevolve.motion.scripted import MOTIONS  # noqa: E402
from robo_coevolve.task_spec import GRAINS  # noqa: E402

# A unit of work: does something and returns how many items (control steps, frames) it did, or
# (items, seconds) when it times only part of what it does.
Unit = Callable[[], int | tuple[int, float]]
CLOCKS = {"cpu": time.thread_time, "wall": time.perf_counter}
# The clock of the physics measurements (``--clock``); rendering always counts wall time.
physics_clock: Callable[[], float] = CLOCKS["cpu"]


# ---------------------------------------------------------------------------------------- timing
def _rate(unit: Unit, seconds: float, clock: Callable[[], float]) -> float:
    """Items/s of ``unit`` run back to back for about ``seconds`` (at least once)."""
    count, elapsed = 0, 0.0
    while elapsed < seconds or count == 0:
        start = clock()
        done = unit()
        took = clock() - start
        items, took = done if isinstance(done, tuple) else (done, took)
        count += items
        elapsed += took
    return count / elapsed


def measure(
    units: dict[str, Unit],
    seconds: float,
    rounds: int,
    warmup: float,
    clock: Callable[[], float] | None = None,
) -> dict[str, float]:
    """Median items/s of each unit over ``rounds`` interleaved rounds of ``seconds / rounds`` each
    (``clock``: default the physics clock)."""
    clock = clock or physics_clock
    for unit in units.values():
        _rate(unit, warmup, clock)
    per_round = seconds / rounds
    rates: dict[str, list[float]] = {name: [] for name in units}
    for _ in range(rounds):
        for name, unit in units.items():
            rates[name].append(_rate(unit, per_round, clock))
    return {name: statistics.median(r) for name, r in rates.items()}


# ---------------------------------------------------------------------------------------- physics
def scripted_actions(env: EggFlipEnv, skill: str, obs: dict) -> np.ndarray:
    """(horizon_steps, 5) env actions of the skill's scripted motion from the first observation."""
    motion = MOTIONS[skill](obs)
    # The motion API returns target poses (``targets``; ``actions`` before the normalised action
    # space); the env turns poses into its actions with ``pose_to_action`` where it has one.
    poses_of = getattr(motion, "targets", None) or motion.actions
    poses = poses_of(env.control_dt, env.horizon_steps)
    to_action = getattr(env, "pose_to_action", None)
    return to_action(poses) if to_action is not None else poses


class SkillRun:
    """One skill's env, initial state and scripted actions, and the three ways of running them."""

    def __init__(self, skill: str, seed: int, image_size: int | None = None):
        self.env = EggFlipEnv(skill=skill, image_size=image_size)
        obs, _ = self.env.reset(seed=seed)
        self.state = self.env.initial_state.copy()
        self.disturbance = self.env.disturbance
        self.actions = scripted_actions(self.env, skill, obs)
        self.substeps = self.env.substeps
        # The env may end the episode early (egg on the floor): the references run as many steps,
        # with the controls the env wrote into MjData (so action scaling and clipping are the env's).
        self.env.reset_to_state(self.state, self.disturbance)
        ctrls, reward = [], 0.0
        for action in self.actions:
            _, reward, terminated, truncated, _ = self.env.step(action)
            ctrls.append(self.env.physics.data.ctrl.copy())
            if terminated or truncated:
                break
        self.steps = len(ctrls)
        self.success = bool(reward > 0)  # the scripted motion solved the task (a sanity check)
        self.ctrls = np.array(ctrls)
        self.env_final_qpos = self.env.physics.data.qpos.copy()

    def env_episode(self) -> int:
        env = self.env
        env.reset_to_state(self.state, self.disturbance)
        for action in self.actions[: self.steps]:
            env.step(action)
        return self.steps

    def _push(self) -> None:
        d = self.disturbance
        p = self.env.physics
        p.set_push(d.force if d.active(p.data.time) else (0, 0))

    def raw_python_episode(self) -> int:
        p = self.env.physics
        model, data, substeps, step = p.model, p.data, self.substeps, mujoco.mj_step
        changer = p.tool_changer  # the season scene's: part of its physics, between control steps
        p.set_state(self.state)
        if self.disturbance is None:
            for ctrl in self.ctrls:
                data.ctrl[:] = ctrl
                for _ in range(substeps):
                    step(model, data)
                if changer is not None:
                    changer.update(data)
        else:  # the same push as the env applies, checked every physics step
            for ctrl in self.ctrls:
                data.ctrl[:] = ctrl
                for _ in range(substeps):
                    self._push()
                    step(model, data)
                if changer is not None:
                    changer.update(data)
        return self.steps

    def raw_c_episode(self) -> int:
        p = self.env.physics
        model, data, substeps, step = p.model, p.data, self.substeps, mujoco.mj_step
        changer = p.tool_changer
        p.set_state(self.state)
        if self.disturbance is not None:  # a push that changes mid-step needs the Python loop
            return self.raw_python_episode()
        for ctrl in self.ctrls:
            data.ctrl[:] = ctrl
            step(model, data, nstep=substeps)
            if changer is not None:
                changer.update(data)
        return self.steps

    def same_trajectory(self) -> dict[str, bool]:
        """Whether each reference ends bit for bit where the env did (so it did the same work)."""
        out = {}
        for name, run in (("raw_python", self.raw_python_episode), ("raw_c", self.raw_c_episode)):
            run()
            out[name] = bool(np.array_equal(self.env.physics.data.qpos, self.env_final_qpos))
        return out

    def close(self) -> None:
        self.env.close()


def bench_physics(skill: str, seed: int, seconds: float, rounds: int, warmup: float) -> dict:
    run = SkillRun(skill, seed)
    rates = measure(
        {"env": run.env_episode, "raw_python": run.raw_python_episode, "raw_c": run.raw_c_episode},
        seconds,
        rounds,
        warmup,
    )
    same = run.same_trajectory()
    sub = run.substeps
    result = {
        "skill": skill,
        "substeps": sub,
        "control_steps_per_episode": run.steps,
        "contacts_at_end": int(run.env.physics.data.ncon),
        "disturbance": run.disturbance is not None,
        "scripted_success": run.success,
        "env_control_steps_per_s": rates["env"],
        "env_physics_steps_per_s": rates["env"] * sub,
        "raw_python_physics_steps_per_s": rates["raw_python"] * sub,
        "raw_c_physics_steps_per_s": rates["raw_c"] * sub,
        "physics_fraction_vs_python_loop": rates["env"] / rates["raw_python"],
        "physics_fraction_vs_c_loop": rates["env"] / rates["raw_c"],
        "env_us_per_control_step": 1e6 / rates["env"],
        "raw_python_us_per_control_step": 1e6 / rates["raw_python"],
        "same_trajectory": same,
    }
    run.close()
    return result


def bench_salt(seed: int, seconds: float, rounds: int, warmup: float) -> dict:
    """The season scene's physics with its shaker and grains against the same scene without them:
    the scripted season's controls, replayed from the same egg and spatula start."""
    run = SkillRun("season", seed)
    p = run.env.physics
    plain = build_model(p.model.body("pan").pos[2], 1.0)
    plain_data = mujoco.MjData(plain)
    p.set_state(run.state)
    for joint in ("egg", *SPATULA_JOINTS):  # the start the grains' run has, on the plain scene
        a, b = p.model.joint(joint), plain.joint(joint)
        width = 7 if joint == "egg" else 1
        plain_data.qpos[b.qposadr[0] : b.qposadr[0] + width] = p.data.qpos[
            a.qposadr[0] : a.qposadr[0] + width
        ]
    plain_data.ctrl[:] = p.data.ctrl
    plain_start = np.empty(mujoco.mj_stateSize(plain, mujoco.mjtState.mjSTATE_INTEGRATION))
    mujoco.mj_getState(plain, plain_data, plain_start, mujoco.mjtState.mjSTATE_INTEGRATION)

    def without_grains() -> int:
        mujoco.mj_setState(plain, plain_data, plain_start, mujoco.mjtState.mjSTATE_INTEGRATION)
        for ctrl in run.ctrls:
            plain_data.ctrl[:] = ctrl
            mujoco.mj_step(plain, plain_data, nstep=run.substeps)
        return run.steps

    rates = measure({"grains": run.raw_c_episode, "plain": without_grains}, seconds, rounds, warmup)
    run.raw_c_episode()
    contacts = int(p.data.ncon)
    run.close()
    return {
        "grains": GRAINS,
        "control_steps_per_episode": run.steps,
        "scripted_success": run.success,
        "contacts_at_end": contacts,
        "grains_physics_steps_per_s": rates["grains"] * run.substeps,
        "plain_physics_steps_per_s": rates["plain"] * run.substeps,
        "ratio_grains_over_plain": rates["grains"] / rates["plain"],
    }


class RandomRun:
    """A MuJoCo env stepped with uniform random actions from one start state, and raw ``mj_step``
    replaying the controls the env wrote (``substeps`` physics steps each) from the same state."""

    def __init__(self, name: str, seed: int, steps: int):
        self.name = name
        self.env = gymnasium.make(name).unwrapped
        self.env.reset(seed=seed)
        ours = isinstance(self.env, EggFlipEnv)
        self.model, self.data = (
            (self.env.physics.model, self.env.physics.data) if ours else (self.env.model, self.env.data)
        )
        self.substeps = self.env.substeps if ours else self.env.frame_skip
        if ours and self.env.disturbance is not None:
            raise ValueError(f"{name}: the random-action run expects a task without a push")
        self.state = self._get_state()
        space = self.env.action_space
        self.actions = np.random.default_rng(seed).uniform(space.low, space.high, (steps, *space.shape))
        self.actions = self.actions.astype(space.dtype)
        self._restore()
        ctrls = []
        for action in self.actions:
            _, _, terminated, truncated, _ = self.env.step(action)
            ctrls.append(self.data.ctrl.copy())
            if terminated or truncated:
                break
        self.steps = len(ctrls)
        self.ctrls = np.array(ctrls)

    def _get_state(self) -> np.ndarray:
        state = np.empty(mujoco.mj_stateSize(self.model, mujoco.mjtState.mjSTATE_INTEGRATION))
        mujoco.mj_getState(self.model, self.data, state, mujoco.mjtState.mjSTATE_INTEGRATION)
        return state

    def _restore(self) -> None:
        if isinstance(self.env, EggFlipEnv):
            self.env.reset_to_state(self.state)
        else:
            mujoco.mj_setState(self.model, self.data, self.state, mujoco.mjtState.mjSTATE_INTEGRATION)
            mujoco.mj_forward(self.model, self.data)

    def env_episode(self) -> tuple[int, float]:
        self._restore()
        step = self.env.step
        start = physics_clock()
        for action in self.actions[: self.steps]:
            step(action)
        return self.steps, physics_clock() - start

    def raw_python_episode(self) -> tuple[int, float]:
        self._restore()
        model, data, substeps, step = self.model, self.data, self.substeps, mujoco.mj_step
        start = physics_clock()
        for ctrl in self.ctrls:
            data.ctrl[:] = ctrl
            for _ in range(substeps):
                step(model, data)
        return self.steps, physics_clock() - start

    def raw_c_episode(self) -> tuple[int, float]:
        self._restore()
        model, data, substeps, step = self.model, self.data, self.substeps, mujoco.mj_step
        start = physics_clock()
        for ctrl in self.ctrls:
            data.ctrl[:] = ctrl
            step(model, data, nstep=substeps)
        return self.steps, physics_clock() - start

    def close(self) -> None:
        self.env.close()


# Gymnasium's own MuJoCo envs, measured beside ours the same way.
REFERENCE_ENVS = ("HalfCheetah-v5", "Ant-v5")


def bench_random(name: str, seed: int, steps: int, seconds: float, rounds: int, warmup: float) -> dict:
    run = RandomRun(name, seed, steps)
    rates = measure(
        {"env": run.env_episode, "raw_python": run.raw_python_episode, "raw_c": run.raw_c_episode},
        seconds,
        rounds,
        warmup,
    )
    run.close()
    return {
        "env_id": name,
        "substeps": run.substeps,
        "control_steps_per_episode": run.steps,
        "env_control_steps_per_s": rates["env"],
        "env_physics_steps_per_s": rates["env"] * run.substeps,
        "raw_python_physics_steps_per_s": rates["raw_python"] * run.substeps,
        "raw_c_physics_steps_per_s": rates["raw_c"] * run.substeps,
        "physics_fraction_vs_python_loop": rates["env"] / rates["raw_python"],
        "physics_fraction_vs_c_loop": rates["env"] / rates["raw_c"],
        "env_overhead_us_per_control_step": 1e6 / rates["env"] - 1e6 / rates["raw_python"],
    }


# ---------------------------------------------------------------------------------------- rendering
def _mid_episode_data(run: SkillRun) -> mujoco.MjData:
    """The state halfway through the scripted episode (blade near the egg), to render."""
    p = run.env.physics
    p.set_state(run.state)
    for ctrl in run.ctrls[: run.steps // 2]:
        p.data.ctrl[:] = ctrl
        mujoco.mj_step(p.model, p.data, nstep=run.substeps)
    return p.data


def bench_render(size: int, seed: int, seconds: float, rounds: int, warmup: float) -> dict:
    run = SkillRun("scoop", seed)
    model, data = run.env.physics.model, _mid_episode_data(run)
    fast = SceneRenderer(model, size, size, "policy", pretty=False)
    pretty = SceneRenderer(model, size, size, "policy", pretty=True)

    def frame(renderer: SceneRenderer) -> Unit:
        def unit() -> int:
            renderer.rgb(data)
            return 1

        return unit

    rates = measure(
        {"fast": frame(fast), "pretty": frame(pretty)}, seconds, rounds, warmup, time.perf_counter
    )
    fast.close()
    pretty.close()
    run.close()
    return {
        "size": size,
        "fast_frames_per_s": rates["fast"],
        "pretty_frames_per_s": rates["pretty"],
        "speedup": rates["fast"] / rates["pretty"],
    }


def bench_env_image(size: int, seed: int, seconds: float, rounds: int, warmup: float) -> dict:
    plain = SkillRun("scoop", seed)
    image = SkillRun("scoop", seed, image_size=size)
    rates = measure(
        {"no_image": plain.env_episode, "image": image.env_episode},
        seconds,
        rounds,
        warmup,
        time.perf_counter,
    )
    plain.close()
    image.close()
    return {
        "skill": "scoop",
        "image_size": size,
        "no_image_control_steps_per_s": rates["no_image"],
        "image_control_steps_per_s": rates["image"],
        "ratio_image_over_no_image": rates["image"] / rates["no_image"],
        "render_us_per_step": 1e6 / rates["image"] - 1e6 / rates["no_image"],
    }


# ---------------------------------------------------------------------------------------- report
def machine() -> dict:
    model_name = platform.processor() or platform.machine()
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model_name = next(
            (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if line.startswith("Model name")),
            model_name,
        )
    except OSError:
        pass
    return {
        "cpu": model_name,
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": platform.python_version(),
        "mujoco": mujoco.__version__,
        "mujoco_gl": os.environ.get("MUJOCO_GL"),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def _k(x: float) -> str:
    return f"{x / 1e3:,.1f}k"


def report(results: dict) -> str:
    m = results["machine"]
    out = [
        f"machine: {m['cpu']}, nproc={m['nproc']}, python {m['python']}, mujoco {m['mujoco']}, "
        f"MUJOCO_GL={m['mujoco_gl']}, {m['date']}",
        f"budget: {results['seconds']} s per measurement in {results['rounds']} interleaved rounds (median); "
        f"physics clock: {results['clock']}",
        "",
        "Physics: env.step() with the scripted motion vs raw mj_step on the same model and controls",
    ]
    rows = []
    for r in results["physics"]:
        same = "yes" if all(r["same_trajectory"].values()) else f"NO {r['same_trajectory']}"
        overhead = r["env_us_per_control_step"] - r["raw_python_us_per_control_step"]
        rows.append(
            [
                r["skill"],
                f"{r['env_control_steps_per_s']:,.0f}",
                _k(r["env_physics_steps_per_s"]),
                _k(r["raw_python_physics_steps_per_s"]),
                _k(r["raw_c_physics_steps_per_s"]),
                f"{r['physics_fraction_vs_python_loop']:.0%}",
                f"{r['physics_fraction_vs_c_loop']:.0%}",
                f"{overhead:,.0f} us",
                same,
                "yes" if r["scripted_success"] else "no",
            ]
        )
    out.append(
        _table(
            [
                "skill",
                "env ctrl steps/s",
                "env phys steps/s",
                "raw py-loop steps/s",
                "raw nstep steps/s",
                "fraction vs py-loop",
                "fraction vs nstep",
                "env overhead/ctrl step",
                "same traj",
                "solved",
            ],
            rows,
        )
    )
    out += [
        "",
        "Physics: env.step() with uniform random actions and the default observation vs raw mj_step "
        "replaying the env's controls, ours beside gymnasium's",
    ]
    rows = [
        [
            r["env_id"],
            str(r["substeps"]),
            f"{r['env_control_steps_per_s']:,.0f}",
            _k(r["env_physics_steps_per_s"]),
            _k(r["raw_python_physics_steps_per_s"]),
            _k(r["raw_c_physics_steps_per_s"]),
            f"{r['physics_fraction_vs_python_loop']:.0%}",
            f"{r['physics_fraction_vs_c_loop']:.0%}",
            f"{r['env_overhead_us_per_control_step']:,.1f} us",
        ]
        for r in results["random"]
    ]
    out.append(
        _table(
            [
                "env",
                "substeps",
                "env ctrl steps/s",
                "env phys steps/s",
                "raw py-loop steps/s",
                "raw nstep steps/s",
                "fraction vs py-loop",
                "fraction vs nstep",
                "env overhead/ctrl step",
            ],
            rows,
        )
    )
    if results.get("salt"):
        r = results["salt"]
        out += [
            "",
            f"Physics: the season scene with its shaker and {r['grains']} grains vs the same scene "
            "without them, the scripted season's controls (raw nstep)",
            _table(
                ["with grains steps/s", "without steps/s", "ratio", "contacts at the end", "solved"],
                [
                    [
                        _k(r["grains_physics_steps_per_s"]),
                        _k(r["plain_physics_steps_per_s"]),
                        f"{r['ratio_grains_over_plain']:.0%}",
                        str(r["contacts_at_end"]),
                        "yes" if r["scripted_success"] else "no",
                    ]
                ],
            ),
        ]
    out += ["", "Rendering: policy camera, fast (no shadows/reflections) vs pretty, same size"]
    rows = [
        [
            f"{r['size']}x{r['size']}",
            f"{r['fast_frames_per_s']:,.0f}",
            f"{r['pretty_frames_per_s']:,.1f}",
            f"{r['speedup']:.1f}x",
        ]
        for r in results["render"]
    ]
    out.append(_table(["size", "fast frames/s", "pretty frames/s", "speed-up"], rows))
    r = results["env_image"]
    out += [
        "",
        f"Env step() with image_size={r['image_size']} vs without ({r['skill']} motion)",
        _table(
            ["no image ctrl steps/s", "image ctrl steps/s", "ratio", "render cost/step"],
            [
                [
                    f"{r['no_image_control_steps_per_s']:,.0f}",
                    f"{r['image_control_steps_per_s']:,.0f}",
                    f"{r['ratio_image_over_no_image']:.0%}",
                    f"{r['render_us_per_step']:,.0f} us",
                ]
            ],
        ),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="time budget of each measurement, s")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per measurement")
    parser.add_argument("--warmup", type=float, default=0.2, help="untimed warm-up of each measurement, s")
    parser.add_argument("--skills", nargs="+", default=list(SKILLS), choices=list(SKILLS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[64, 128], help="render sizes, pixels")
    parser.add_argument("--image-size", type=int, default=64, help="image_size of the env-with-image run")
    parser.add_argument("--seed", type=int, default=0, help="reset seed of the initial states")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu", help="what physics figures count")
    parser.add_argument(
        "--random-steps", type=int, default=150, help="control steps of a random-action episode"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1 or args.random_steps < 1:
        parser.error("--seconds must be > 0, --rounds >= 1 and --random-steps >= 1")

    global physics_clock
    physics_clock = CLOCKS[args.clock]
    start = time.perf_counter()
    random_ids = [SKILL_ENV_IDS[s] for s in args.skills] + list(REFERENCE_ENVS)
    results = {
        "machine": machine(),
        "seconds": args.seconds,
        "rounds": args.rounds,
        "clock": args.clock,
        "physics": [bench_physics(s, args.seed, args.seconds, args.rounds, args.warmup) for s in args.skills],
        "random": [
            bench_random(name, args.seed, args.random_steps, args.seconds, args.rounds, args.warmup)
            for name in random_ids
        ],
        "salt": bench_salt(args.seed, args.seconds, args.rounds, args.warmup)
        if "season" in args.skills
        else None,
        "render": [bench_render(n, args.seed, args.seconds, args.rounds, args.warmup) for n in args.sizes],
        "env_image": bench_env_image(args.image_size, args.seed, args.seconds, args.rounds, args.warmup),
    }
    results["wall_s"] = time.perf_counter() - start
    print(report(results))
    print(f"\n(total {results['wall_s']:.1f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
