"""The run's config groups, built from the code: each group's default option is its component's
full signature (hydra-zen ``builds``), so every knob can be overridden and its default is the
code's. ``store()`` puts them into Hydra's ConfigStore under the group/name their YAML had; the
files left in ``conf/`` are presets that hold only differences (``conf/config.yaml`` picks the
options)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import MissingConfigException
from hydra_zen import ZenField, builds, kwargs_of, make_config
from omegaconf import DictConfig

from robo_coevolve.coevolve import AnswerSearch, TaskAdversary, TaskSynthesizer
from robo_coevolve.coevolve.task_space import TaskSpace
from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.evolve.config import Budget, CloneConfig, CoEvolveConfig, VideoConfig
from robo_coevolve.evolve.schedule import ExploreSchedule
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.cem import MixtureCEM
from robo_coevolve.explore.ray_backend import RayBackend
from robo_coevolve.explore.search import SearchConfig
from robo_coevolve.learn.distill import DistillConfig
from robo_coevolve.policy import PolicyConfig, PolicyConfigError
from robo_coevolve.practice import PracticeConfig, PreferenceConfig, RLConfig
from robo_coevolve.refine import NoveltyGate, Refiner
from robo_coevolve.resources import conf_dir
from robo_coevolve.scoring import Thresholds
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.workspace.build import build
from robo_coevolve.workspace.evolve import EvolveWorkspace
from robo_coevolve.workspace.explore import ExploreWorkspace
from robo_coevolve.workspace.scripted_demo import ScriptedDemo


def full(target, **overrides):
    """``target``'s whole signature as a config, its defaults the code's."""
    return builds(target, populate_full_signature=True, **overrides)


# The workspace passes what a component gets from the run (the whole config, the run directory,
# the skill, the env's control rate); the scoring thresholds are the env's alone.
WORKSPACE = ("cfg", "output_dir")
BACKEND = ("control_hz", "thresholds")

# The explore group: the primitive search's settings (``SearchConfig``, which ``search_settings``
# builds from them), and beside them what the explore job and the loop read around the search.
EXPLORE = make_config(
    eval_tasks=100,  # held-out tasks the search's answer is evaluated on (explore job)
    tasks=kwargs_of(TaskDistribution.for_skill, zen_exclude=("skill",)),  # the explore job's tasks
    # random smooth noise without primitives, for comparison (explore job; trials 0: skip)
    noise_baseline=make_config(trials=200, kind="pink", temperature=0.3),
    schedule=full(ExploreSchedule),  # the loop's iterations after a node's first search
    backend=None,  # the explore/backend group (local or ray)
    hydra_defaults=["_self_", {"backend": "local"}],
    bases=(full(SearchConfig, cem=kwargs_of(MixtureCEM, zen_exclude=("dim", "rng", "population"))),),
)

# The synthesizer's task space as its bounds (``coevolve.synthesizer.space.egg_mass=[...]``).
SYNTHESIZER = make_config(space=ZenField(Any, TaskSpace().bounds), bases=(full(TaskSynthesizer),))

CONFIGS = {
    ("env", "egg_flip"): full(
        EggFlipEnv, thresholds=full(Thresholds), zen_exclude=("task", "skill"), hydra_convert="all"
    ),
    ("explore", "primitives"): EXPLORE,
    ("explore/backend", "local"): full(LocalBackend, zen_exclude=BACKEND),
    ("explore/backend", "ray"): full(RayBackend, zen_exclude=BACKEND),
    ("refine", "default"): full(Refiner, novelty=full(NoveltyGate), zen_exclude=("thresholds",)),
    # the residual is practice's to add (practice.rl.residual_scale), not a setting of the clone
    ("policy", "state"): full(PolicyConfig, zen_exclude=("residual_scale", "residual_hidden")),
    ("train", "bc"): full(CloneConfig),
    ("budget", "short"): full(Budget),
    ("coevolve", "off"): full(CoEvolveConfig),
    ("coevolve/synthesizer", "default"): SYNTHESIZER,
    ("coevolve/adversary", "default"): full(TaskAdversary),
    ("coevolve/answer", "default"): full(AnswerSearch),
    ("distill", "off"): full(DistillConfig),
    ("practice", "off"): full(PracticeConfig, rl=full(RLConfig), dpo=full(PreferenceConfig)),
    ("workspace", "evolve"): full(EvolveWorkspace, video=full(VideoConfig), zen_exclude=WORKSPACE),
    ("workspace", "explore"): full(ExploreWorkspace, zen_exclude=WORKSPACE),
    ("workspace", "scripted_demo"): full(ScriptedDemo, zen_exclude=WORKSPACE),
}


POLICIES = ["state", *sorted(p.stem for p in (conf_dir() / "policy").glob("*.yaml"))]


GROUPS = sorted({group.split("/")[0] for group, _ in CONFIGS} | {"skill_tree"})
# The top level (conf/config.yaml builds on it): a seed that is not an integer is refused while
# Hydra composes; each group's node is its option's.
RUN = make_config(seed=ZenField(int, 0), **{group: ZenField(Any, None) for group in GROUPS})


def store() -> None:
    """Put every group's default option into Hydra's ConfigStore (again: it replaces them)."""
    cs = ConfigStore.instance()
    cs.store(name="run_schema", node=RUN)
    for (group, name), node in CONFIGS.items():
        cs.store(group=group, name=name, node=node)


def policy_option(path: str | Path) -> PolicyConfig:
    """The ``PolicyConfig`` of the ``policy`` option a file of ``conf/policy/`` names (its stem:
    ``conf/policy/vla.yaml`` is ``policy=vla``, ``conf/policy/state.yaml`` the code's defaults)."""
    name = Path(path).stem
    try:
        return build(compose(f"policy={name}").policy, f"policy={name}")
    except MissingConfigException:
        raise PolicyConfigError(f"{path}: no policy option {name!r} (conf/policy/ has {POLICIES})") from None


def compose(*overrides: str) -> DictConfig:
    """The run's config as ``python -m robo_coevolve OVERRIDES...`` composes it."""
    store()
    with initialize_config_dir(str(conf_dir()), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))
