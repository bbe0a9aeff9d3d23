"""Co-evolution inside the loop: the pool feeds exploration, is saved at the commit point, and a
SIGKILLed run resumes to the same pool, metrics and library as an uninterrupted one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from run_killer import kill_when

from robo_coevolve.coevolve import TaskPool
from robo_coevolve.coevolve.task_pool import ELITES_KEPT, OWN
from robo_coevolve.evolve.run_state import RunState, rollback
from robo_coevolve.evolve.selection import pool_key
from robo_coevolve.library import SkillLibrary

# Scoop is never mastered, so iterations 2 and 3 run synthesis on its pool after the search; with
# grip 1.0 they explore with primitives whatever the tiny policy scores (2 of 8 tasks on one CPU,
# 1 on another), so the pool's trials do not hinge on the last bits of a training run. The answer
# search takes any variant (bar 1.0) once it has 2 primitive trials: iteration 2 or 3 runs one.
TINY = [
    "coevolve=default",
    "coevolve.answer={_target_: robo_coevolve.coevolve.AnswerSearch, trials: 100, population: 20,"
    " select_trials: 5, min_trials: 2, bar: 1.0, check: 10, demos: 20, max_searches: 1}",
    "explore.schedule.grip=1.0",
    "explore.budget=150",
    "explore.population=50",
    "explore.select_trials=10",
    "explore.demos=40",
    "explore.restarts=0",  # one search, below its demo bar (restarts: tests/explore/test_search.py)
    "explore.polish=null",  # (polish: tests/explore/test_search.py)
    "explore.schedule.trials=40",
    "explore.backend.workers=1",
    "train.fit.steps=100",
    "train.fit.eval_every=50",
    "train.finetune_steps=50",
    "skill_tree.nodes.scoop.eval_tasks=8",
    "skill_tree.nodes.scoop.mastery=1.0",
    "budget.iterations=3",
    "workspace.refine_successes=30",
    "workspace.video.every=0",
]


def command(run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={run_dir}", *TINY, *overrides]


def metrics(run_dir: Path) -> list[dict]:
    def strip(d):
        return {k: strip(v) if isinstance(v, dict) else v for k, v in d.items() if k != "seconds"}

    return [strip(json.loads(line)) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("coevolve") / "run"
    proc = subprocess.run(command(run_dir), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


def test_the_pool_feeds_exploration_and_is_saved_with_the_run(uninterrupted):
    rows = metrics(uninterrupted)
    assert [r["explore"]["kind"] for r in rows] == ["search", "primitives", "primitives"]
    assert rows[0]["explore"]["coevolve"] == {"pool": 1}
    later = rows[1]["explore"]["coevolve"]
    assert later["proposed"] >= 1 and later["pool"] == 1 + later["admitted"]
    assert rows[1]["explore"]["trials"] == 40 or later["validation_trials"] > 0
    state = RunState.load(uninterrupted)
    assert state.pools == {"scoop": "coevolve/scoop_0003.json"}
    pool = TaskPool.load(uninterrupted / state.pools["scoop"])
    assert len(pool) == rows[2]["explore"]["coevolve"]["pool"]
    # every exploration trial (search included) and every evaluation episode was counted
    outcomes = sum(len(e.outcomes) for e in pool.entries)
    assert outcomes >= 150 - 30 + 2 * 20 + 3 * 8
    # every primitive trial after the search counted its mode on its variant (and the admitted
    # variants' solvability trials theirs)
    primitive = sum(r["explore"]["primitive_trials"] for r in rows[1:])
    modes = [m for e in pool.entries for _, m, _ in e.mode_outcomes]
    assert (
        primitive
        <= len(modes)
        <= primitive + sum(r["explore"]["coevolve"]["validation_trials"] for r in rows[1:])
    )
    n_modes = len(RunState.load(uninterrupted).nodes["scoop"]["modes"])
    assert set(modes) <= {*range(n_modes), OWN}
    # each variant keeps its best primitive trials, best first, for its own search
    for e in pool.entries:
        scores = [s for s, _ in e.elites]
        assert scores == sorted(scores, reverse=True) and len(scores) <= ELITES_KEPT
    assert sum(len(e.elites) for e in pool.entries) >= min(ELITES_KEPT, primitive)
    # only the committed iteration's pool is kept
    assert sorted(p.name for p in (uninterrupted / "coevolve").iterdir()) == ["scoop_0003.json"]


def test_the_answer_search_runs_once_and_its_trials_count(uninterrupted):
    """The answer search runs in the first synthesis round where a variant has 2 mode trials
    (iteration 2 or 3, by how the search's trials fell), and never again (max_searches 1)."""
    rows = metrics(uninterrupted)
    ran = [k for k, r in enumerate(rows[1:], 1) if r["explore"]["coevolve"]["answer"] is not None]
    assert len(ran) == 1
    row = rows[ran[0]]
    answer = row["explore"]["coevolve"]["answer"]
    assert (
        answer["trials"] >= 100 + 2 * 2 * 10
        and answer["trials"] <= row["explore"]["coevolve"]["validation_trials"]
    )
    assert TaskPool.load(uninterrupted / RunState.load(uninterrupted).pools["scoop"]).searched == [
        answer["target"]
    ]
    node = RunState.load(uninterrupted).nodes["scoop"]
    assert answer["adopted"] == (
        answer["rates"]["answer"]["variant"] > answer["rates"]["node"]["variant"]
        and answer["rates"]["answer"]["own"] >= answer["rates"]["node"]["own"] - 0.05
    )
    if answer["adopted"]:  # the node's answer and a mode now; its demonstrations competed
        assert node["best_params"] == node["modes"][-1] and answer["demos"] == 20
        assert row["explore"]["examples"] in ("answer", "explored")
    else:
        assert answer["demos"] == 0 and "examples" not in row["explore"]


def test_the_pool_survives_a_sigkill_and_resume(uninterrupted, tmp_path):
    run_dir = tmp_path / "run"
    kill_when(command(run_dir), run_dir / "train" / "iter_0003")
    assert RunState.load(run_dir).iteration == 2
    resumed = subprocess.run(command(run_dir), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resuming" in resumed.stdout + resumed.stderr
    assert metrics(run_dir) == metrics(uninterrupted)
    name = "coevolve/scoop_0003.json"
    assert TaskPool.load(run_dir / name).to_dict() == TaskPool.load(uninterrupted / name).to_dict()
    a = SkillLibrary(run_dir / "library", create=False)
    b = SkillLibrary(uninterrupted / "library", create=False)
    assert [s.meta for s in a.segments("scoop")] == [s.meta for s in b.segments("scoop")]


def test_rollback_removes_the_pools_of_uncommitted_iterations(tmp_path):
    from robo_coevolve.task_distribution import TaskDistribution

    pool = TaskPool.seeded(TaskDistribution.for_skill("scoop"))
    for k in (1, 2, 3):
        pool.save(tmp_path / "coevolve" / f"scoop_{k:04d}.json")
    (tmp_path / "coevolve" / ".scoop_0003.json.123.tmp").write_text("{")
    state = RunState(iteration=2, pools={"scoop": "coevolve/scoop_0002.json"})
    rollback(tmp_path, state, SkillLibrary(tmp_path / "library"))
    assert sorted(p.name for p in (tmp_path / "coevolve").iterdir()) == ["scoop_0001.json", "scoop_0002.json"]


@pytest.mark.parametrize(
    "overrides, words",
    [
        (["coevolve=default", "coevolve.synthesizer.step=-1"], ["coevolve", "step=-1", "> 0"]),
        (["coevolve=default", "coevolve.synthesizer.space.egg_mass=[0.01,0.5]"], ["egg_mass", "0.5"]),
        (["coevolve=adversarial", "coevolve.adversary.episodes=0"], ["coevolve", "episodes"]),
    ],
)
def test_a_bad_coevolve_override_fails_when_the_job_is_built(tmp_path, overrides, words):
    from robo_coevolve.configs import compose
    from robo_coevolve.workspace.evolve import ConfigError, EvolveWorkspace

    cfg = compose(*overrides)
    with pytest.raises(ConfigError) as e:
        EvolveWorkspace(cfg, tmp_path / "run")
    for w in words:
        assert w in str(e.value)


def test_coevolve_is_off_by_default(tmp_path):
    from robo_coevolve.configs import compose
    from robo_coevolve.workspace.evolve import EvolveWorkspace

    cfg = compose()
    assert not EvolveWorkspace(cfg, tmp_path / "run").coevolve.enabled


def test_the_adversarial_curriculum_runs_in_the_loop(tmp_path):
    """Also the per-variant split (grip 0: the policy has grip after the search): each drawn task
    is a primitive or a policy episode, and the policy's are counted as its variant's grip."""
    run_dir = tmp_path / "run"
    tiny = [o for o in TINY if not o.startswith(("coevolve=", "budget.iterations", "explore.schedule.grip"))]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "robo_coevolve",
            f"hydra.run.dir={run_dir}",
            *tiny,
            "coevolve=adversarial",
            "coevolve.adversary.population=4",
            "coevolve.adversary.episodes=1",
            "coevolve.answer.trials=60",
            "coevolve.answer.population=20",
            "coevolve.answer.select_trials=5",
            "coevolve.answer.check=5",
            "coevolve.answer.demos=10",
            "coevolve.select_episodes=6",
            "budget.iterations=2",
            "explore.schedule.grip=0.0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = metrics(run_dir)
    attack = rows[1]["explore"]["coevolve"]["adversary"]
    assert attack["episodes"] == attack["tried"] >= 1
    assert rows[1]["explore"]["coevolve"]["validation_trials"] >= attack["episodes"]
    pool = TaskPool.load(run_dir / RunState.load(run_dir).pools["scoop"])
    # only tasks the primitives solved entered the pool
    assert all(any(s for _, s in e.outcomes) for e in pool.entries if e.origin == "adversary")
    explored = rows[1]["explore"]
    assert explored["kind"] == "mixed"
    assert explored["primitive_trials"] + explored["policy_episodes"] + attack["episodes"] <= 40
    assert sum(len(e.policy_outcomes) for e in pool.entries) == explored["policy_episodes"]
    assert all(k == 2 for e in pool.entries for k, _ in e.policy_outcomes)
    # the pool has variants by iteration 2's selection, so the policies also ran on its tasks
    assert rows[1]["explore"]["coevolve"]["pool"] > 1
    selection = rows[1]["train"]["selection"]
    assert all(pool_key("scoop") in rates for rates in [*selection["candidates"], selection["current"]])
