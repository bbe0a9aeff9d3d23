"""`make run`'s config builds exactly the components the code builds with no arguments."""

import dataclasses
import inspect

import hydra
import pytest

from robo_coevolve.configs import compose
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.evolve.config import Budget, CloneConfig, CoEvolveConfig, VideoConfig
from robo_coevolve.evolve.schedule import ExploreSchedule
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.cem import MixtureCEM
from robo_coevolve.explore.search import SearchConfig
from robo_coevolve.learn import DistillConfig, TrainConfig
from robo_coevolve.policy import PolicyConfig
from robo_coevolve.refine import Refiner
from robo_coevolve.workspace.evolve import EvolveWorkspace
from robo_coevolve.workspace.explore import ExploreWorkspace


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The main job's workspace, built as ``python -m robo_coevolve`` builds it."""
    cfg = compose()
    run_dir = tmp_path_factory.mktemp("run")
    built = hydra.utils.instantiate(cfg.workspace, cfg=cfg, output_dir=run_dir, _recursive_=False)
    assert isinstance(built, EvolveWorkspace)
    return built


def test_the_loop_make_run_builds_is_the_loop_built_in_code(workspace):
    assert workspace.train == CloneConfig()
    assert workspace.train.fit == TrainConfig()
    assert workspace.budget == Budget()
    assert workspace.coevolve == CoEvolveConfig()
    assert workspace.distill == DistillConfig()
    assert workspace.schedule == ExploreSchedule()
    assert workspace.video == VideoConfig()
    assert workspace.policy_config == PolicyConfig()


def test_the_search_is_the_code_default_with_mixture_cem_defaults(workspace):
    cem = {
        name: p.default
        for name, p in inspect.signature(MixtureCEM).parameters.items()
        if name not in ("dim", "rng", "population")
    }
    assert workspace.search.cem == cem
    assert dataclasses.replace(workspace.search, cem={}) == SearchConfig()


def test_refiner_env_and_backend_are_built_with_the_code_defaults(workspace):
    assert vars(workspace.refiner).keys() == vars(Refiner()).keys()
    for name, value in vars(Refiner()).items():
        if name != "_envs":
            assert getattr(workspace.refiner, name) == value, name
    cfg = compose()
    env, plain = hydra.utils.instantiate(cfg.env), EggFlipEnv()
    try:
        for name in ("control_dt", "privileged", "image_size", "point_cloud", "render_size", "render_camera"):
            assert getattr(env, name) == getattr(plain, name), name
        assert env.scorer.thresholds == plain.scorer.thresholds
    finally:
        env.close(), plain.close()
    backend = hydra.utils.instantiate(cfg.explore.backend)
    assert isinstance(backend, LocalBackend)
    assert (backend.workers, backend.chunk_size, backend.policy_batch) == (
        LocalBackend().workers,
        LocalBackend().chunk_size,
        LocalBackend().policy_batch,
    )


def test_the_workspaces_take_their_signature_defaults(tmp_path):
    cfg = compose("workspace=explore")
    built = hydra.utils.instantiate(cfg.workspace, cfg=cfg, output_dir=tmp_path, _recursive_=False)
    plain = ExploreWorkspace(cfg, tmp_path)
    for name in ("skills", "video", "camera", "frame_every", "refine_successes"):
        assert getattr(built, name) == getattr(plain, name), name


def test_presets_change_only_what_they_name():
    base, full = compose(), compose("budget=full")
    assert Budget(**{k: v for k, v in full.budget.items() if k != "_target_"}) == Budget(
        iterations=30, until=None, consolidate=True
    )
    vla = hydra.utils.instantiate(compose("policy=vla").policy)
    assert vla.use_image and not vla.use_egg_state and vla.execute == 4
    assert vla.hidden == PolicyConfig().hidden and base.policy.hidden == vla.hidden
    distill = compose("distill=image").distill
    assert distill.student.use_image and distill.start_states == DistillConfig().start_states
    adversarial = compose("coevolve=adversarial").coevolve
    assert adversarial.synthesizer.too_easy == 0.75 and adversarial.select_episodes == 50
    assert compose("coevolve=default").coevolve.synthesizer.too_easy == 1.0


def test_the_synthesizer_runs_at_the_env_rate():
    cfg = compose("coevolve=default", "env.control_hz=25")
    assert cfg.coevolve.synthesizer.control_hz == 25


def test_the_env_thresholds_judge_the_loop_trials_and_replays(tmp_path):
    """``env.thresholds.*`` reach what scores the loop's trials (the backend) and the refiner's
    replays, not only an env built from the env group."""
    cfg = compose("env.thresholds.crack_force=20.0", "env.thresholds.hold_time=0.3")
    workspace = EvolveWorkspace(cfg, tmp_path)
    assert workspace.refiner.thresholds.crack_force == 20.0
    with workspace.backend() as backend:
        assert backend.thresholds.crack_force == 20.0 and backend.thresholds.hold_time == 0.3
