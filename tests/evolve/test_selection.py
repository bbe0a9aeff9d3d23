"""Policy selection in the loop: the best of the newly trained candidates replaces the current
policy only if it does as well closed loop on the iteration's selection tasks, where all run;
and what the loop works on, clones and rehearses around it."""

import numpy as np
import pytest
import torch
from bare_settings import train_config
from scripted_segments import scripted_segments

from robo_coevolve.evolve.cloning import Cloner, rehearsal_share
from robo_coevolve.evolve.config import Budget, CloneConfig
from robo_coevolve.evolve.curriculum import Curriculum
from robo_coevolve.evolve.datasets import data_sets, rehearsal_data, segment_source
from robo_coevolve.evolve.exploration import trials_left
from robo_coevolve.evolve.run_state import RunState
from robo_coevolve.evolve.selection import pool_key, select, selection_score, selection_tasks
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import SkillTree

CONFIG = PolicyConfig(
    use_language=False, hidden=128, execute=4, predict_end=False, min_std=1e-3, input_noise=0.0
)


def clone_config(**settings) -> CloneConfig:
    """Cloning without selection, redraws or split data sets unless ``settings`` ask for them."""
    bare = dict(refit=False, select_episodes=0, redraws=0, compare_examples=False, split_sources=False)
    return CloneConfig(**{**bare, "min_source_segments": 0, "workers": 1, **settings})


def run_budget(**settings) -> Budget:
    """A budget over every node unless ``settings`` say otherwise."""
    return Budget(**{"iterations": 10, "until": None, **settings})


@pytest.fixture(scope="module")
def scooping_weights():
    """Weights of a policy cloned from 16 scripted scoops: it scoops 40-60% of the selection tasks
    (the last bits of its normalisation move it inside that range), a random policy none."""
    torch.manual_seed(0)
    policy = VLAPolicy(CONFIG)
    data = ChunkDataset.from_segments(scripted_segments("scoop", 16), CONFIG.chunk)
    BCTrainer(policy, TrainConfig(steps=600, batch_size=128, eval_every=100, progress=False)).fit(data)
    return {k: v.clone() for k, v in policy.state_dict().items()}


@pytest.fixture
def backend():
    with LocalBackend(workers=1) as backend:
        yield backend


def tasks(tree: SkillTree, node: str, k: int, episodes: int, **pool):
    """Iteration ``k``'s selection tasks for training ``node`` in a run of seed 0."""
    return selection_tasks(tree, tree.node(node), k, seed=0, episodes=episodes, **pool)


def random_policy() -> VLAPolicy:
    torch.manual_seed(1)
    return VLAPolicy(CONFIG)  # scoops nothing


def scooping_policy(weights) -> VLAPolicy:
    policy = VLAPolicy(CONFIG)
    policy.load_state_dict(weights)
    return policy.eval()


FIT = {"steps": 1}  # a training history stands in; selection only passes it on


TREE = {"scoop": {"requires": []}, "flip": {"requires": ["scoop"]}}


def test_a_worse_candidate_is_rejected_and_the_current_policy_stays(backend, scooping_weights):
    tree = SkillTree.from_config(TREE)
    current = scooping_policy(scooping_weights)
    policy, fit, result = select(
        [(random_policy(), FIT)], current, tasks(tree, "scoop", 2, 10), backend, new_stage=False
    )
    assert result["candidates"] == [{"scoop": 0.0}] and result["current"]["scoop"] >= 0.3
    assert result["taken"] is None and policy is current and fit is FIT


def test_the_best_candidate_is_taken_and_a_new_stage_always_takes_one(backend, scooping_weights):
    tree = SkillTree.from_config(TREE)
    good = scooping_policy(scooping_weights)
    candidates = [(random_policy(), FIT), (good, FIT)]
    policy, _, result = select(candidates, random_policy(), tasks(tree, "scoop", 2, 10), backend, False)
    assert result["taken"] == 1 and policy is good
    scores = [r["scoop"] for r in result["candidates"]]
    assert scores[1] > scores[0] == result["current"]["scoop"] == 0
    worse = random_policy()
    policy, _, result = select([(worse, FIT)], good, tasks(tree, "flip", 3, 10), backend, new_stage=True)
    assert result["taken"] == 0 and policy is worse and result["current"] is None
    assert set(result["candidates"][0]) == {"flip", "scoop"}  # ancestors too


def test_without_selection_episodes_the_first_candidate_is_taken(scooping_weights):
    tree = SkillTree.from_config(TREE)
    first, second = random_policy(), scooping_policy(scooping_weights)
    assert tasks(tree, "scoop", 2, 0) is None
    policy, fit, result = select([(first, FIT), (second, {})], second, None, None, new_stage=False)
    assert policy is first and fit is FIT and result is None


def selection_rates(monkeypatch, rates: dict[int, dict[str, float]]) -> None:
    """Selection's rollouts replaced by fixed success rates: ``rates[id(policy)][skill]``."""
    from types import SimpleNamespace

    import robo_coevolve.evolve.selection as selection_module

    monkeypatch.setattr(
        selection_module,
        "evaluate_policy",
        lambda policy, dist, backend, n, seed: SimpleNamespace(
            success_rate=rates[id(policy)][dist.base.skill]
        ),
    )


def test_example_sets_are_chosen_on_the_node_and_the_policy_on_every_bar(monkeypatch):
    """Comparing example sets (own_best): the set is the one whose clone does the node best,
    but the policy kept is the best by the usual score, so a clone that lost an ancestor is not
    kept for being a little better at the new node (the vision run's catch: 66% with flip 20%
    against 60% with flip 98%)."""
    tree = SkillTree.from_config(
        {
            "scoop": {"mastery": 0.9},
            "flip": {"requires": ["scoop"], "mastery": 0.9},
            "catch": {"requires": ["flip"]},
        }
    )
    tree.record("scoop", 1, 1.0)
    tree.record("flip", 2, 0.95)
    search, demos = object(), object()
    rates = {
        id(search): {"catch": 0.60, "scoop": 1.0, "flip": 0.98},
        id(demos): {"catch": 0.66, "scoop": 1.0, "flip": 0.2},
    }
    selection_rates(monkeypatch, rates)
    catch = tasks(tree, "catch", 3, 5)
    candidates = [(search, {"set": "search"}), (demos, {"set": "demos"})]
    policy, fit, result = select(candidates, None, catch, None, new_stage=True, own_best=True)
    assert result["own_best"] == 1 and result["taken"] == 0
    assert policy is search and fit == {"set": "search"}
    _, _, result = select([(search, FIT), (demos, FIT)], None, catch, None, new_stage=True)
    assert "own_best" not in result and result["taken"] == 0


def test_clones_are_redrawn_while_none_holds_every_bar(monkeypatch):
    """``train.redraws``: while no candidate holds every bar on the selection tasks, another
    round is trained and joins the candidates (and their sets' names), up to ``redraws`` rounds;
    a round that brings one that holds every bar ends the drawing."""
    nodes = {"scoop": {"mastery": 0.9}, "flip": {"requires": ["scoop"], "mastery": 0.9}}
    tree = SkillTree.from_config({**nodes, "catch": {"requires": ["flip"]}})
    tree.record("scoop", 1, 1.0)
    tree.record("flip", 2, 0.95)
    forgets, partly, holds, late = object(), object(), object(), object()
    rates = {
        id(forgets): {"catch": 0.9, "scoop": 1.0, "flip": 0.0},
        id(partly): {"catch": 0.9, "scoop": 1.0, "flip": 0.6},
        id(holds): {"catch": 0.85, "scoop": 1.0, "flip": 0.92},
        id(late): {"catch": 0.95, "scoop": 1.0, "flip": 0.95},
    }
    selection_rates(monkeypatch, rates)
    rounds = {1: [partly], 2: [holds], 3: [late]}
    drawn = []

    def draw(r):
        drawn.append(r)
        return [(p, {"round": r}) for p in rounds[r]], ["search"] * len(rounds[r])

    catch = tasks(tree, "catch", 3, 5)
    redraws = clone_config(select_episodes=5, redraws=3).redraws
    candidates, sets = [(forgets, {"round": 0})], ["search"]
    policy, fit, result = select(candidates, None, catch, None, True, draw=draw, redraws=redraws, sets=sets)
    assert drawn == [1, 2] and result["redraws"] == 2  # round 3 never trained: round 2 held
    assert len(result["candidates"]) == len(candidates) == len(sets) == 3
    assert result["taken"] == 2 and policy is holds and fit == {"round": 2}
    # without redraws (the default), the first round is all there is
    redraws = clone_config(select_episodes=5).redraws
    drawn.clear()
    policy, _, result = select([(forgets, FIT)], None, catch, None, True, draw=draw, redraws=redraws)
    assert drawn == [] and "redraws" not in result and policy is forgets


def test_the_selection_score_puts_holding_every_bar_before_the_mean():
    bars = {"scoop": 0.95, "flip": 0.9, "catch": 0.8}
    holds = {"scoop": 0.95, "flip": 0.91, "catch": 0.82}
    drops_one = {"scoop": 1.0, "flip": 0.95, "catch": 0.75}  # higher mean, catch under its bar
    assert np.mean(list(drops_one.values())) > np.mean(list(holds.values()))
    assert selection_score(holds, bars) > selection_score(drops_one, bars)
    # below the bars, the smaller total shortfall wins; with every bar held, the higher mean
    assert selection_score({"scoop": 0.9, "flip": 0.85}, bars) > selection_score(
        {"scoop": 1.0, "flip": 0.7}, bars
    )
    assert selection_score({"scoop": 0.97, "flip": 0.93, "catch": 0.85}, bars) > selection_score(holds, bars)


def test_selection_settings_are_checked():
    with pytest.raises(ValueError, match="select_episodes"):
        clone_config(select_episodes=-1)
    with pytest.raises(ValueError, match="needs train.select_episodes"):
        clone_config(candidates=2)
    with pytest.raises(ValueError, match="candidates"):
        clone_config(candidates=0, select_episodes=5)
    with pytest.raises(ValueError, match="compare_examples=true needs train.select_episodes"):
        clone_config(compare_examples=True)
    with pytest.raises(ValueError, match="split_sources=true needs train.select_episodes"):
        clone_config(split_sources=True)
    with pytest.raises(ValueError, match="redraws=2 needs train.select_episodes"):
        clone_config(redraws=2)
    with pytest.raises(ValueError, match="redraws=-1 must be >= 0"):
        clone_config(redraws=-1, select_episodes=5)


@pytest.mark.parametrize("consolidate", [False, True])
def test_consolidation_retrains_a_forgotten_skill_once_the_tree_is_mastered(consolidate):
    """scoop -> flip -> catch all mastered, but training catch took scoop below its bar: with
    ``consolidate`` the run goes on with scoop (rehearsing flip and catch, its descendants);
    without, it is over. An active node always comes first."""
    tree = SkillTree.from_config(
        {"scoop": {"mastery": 0.9}, "flip": {"requires": ["scoop"]}, "catch": {"requires": ["flip"]}}
    )
    curriculum = Curriculum(tree, run_budget(consolidate=consolidate))

    def share(node: str, skills: int) -> float:
        return rehearsal_share(clone_config(), curriculum.consolidating(tree.node(node)), skills)

    tree.record("scoop", 1, 0.95)
    assert curriculum.focus().name == "flip"
    assert [n.name for n in curriculum.kept(tree.node("flip"))] == ["scoop"]
    assert share("flip", 1) == TrainConfig().rehearsal_share
    tree.record("scoop", 2, 0.5)  # forgotten while flip is still active: flip first anyway
    assert curriculum.focus().name == "flip"
    tree.record("flip", 2, 0.95)
    tree.record("catch", 3, 0.9)
    tree.record("scoop", 3, 0.85)  # all mastered; scoop now below its 0.9
    assert tree.is_mastered()
    if consolidate:
        assert curriculum.focus().name == "scoop" and curriculum.stop_reason(RunState()) is None
        assert [n.name for n in curriculum.kept(tree.node("scoop"))] == ["flip", "catch"]
        assert share("scoop", 2) == pytest.approx(2 / 3)  # thirds
        tree.record("scoop", 4, 0.92)  # consolidated
    assert curriculum.focus() is None and curriculum.stop_reason(RunState()) == "mastered"


def test_past_mastery_keeps_training_the_until_node_as_an_active_one():
    """budget.past_mastery (benchmarks at a fixed trial budget): once scoop, the one ``until``
    node, is mastered, the loop stays on it, not on flip, and trains it as an active node (no
    consolidation's fine-tuning or equal shares) until the iterations run out."""
    tree = SkillTree.from_config({"scoop": {"mastery": 0.9}, "flip": {"requires": ["scoop"]}})
    curriculum = Curriculum(tree, run_budget(iterations=3, until=["scoop"], past_mastery=True))
    assert curriculum.focus().name == "scoop"
    tree.record("scoop", 1, 1.0)
    assert tree.status["scoop"] == "mastered" and tree.status["flip"] == "active"
    consolidating = curriculum.consolidating(tree.node("scoop"))
    assert curriculum.focus().name == "scoop" and not consolidating
    assert rehearsal_share(clone_config(), consolidating, 1) == TrainConfig().rehearsal_share
    assert curriculum.stop_reason(RunState(iteration=2)) is None
    assert curriculum.stop_reason(RunState(iteration=3)) == "iterations"
    # without it, the mastered scoop ends the run
    assert Curriculum(tree, run_budget(iterations=3, until=["scoop"])).stop_reason(RunState()) == "mastered"
    with pytest.raises(KeyError, match="nope"):
        Curriculum(tree, run_budget(until=["nope"]))
    with pytest.raises(ValueError, match="past_mastery=true needs .* budget.until"):
        run_budget(past_mastery=True)


def test_the_minutes_budget_counts_each_iteration_once():
    """budget.minutes compares the committed iterations' wall time (resumed runs included) with
    the limit; this session's time is part of it already and must not be added again."""
    tree = SkillTree.from_config({"scoop": {}})
    curriculum = Curriculum(tree, run_budget(iterations=100, minutes=10))
    assert curriculum.stop_reason(RunState(elapsed_s=9 * 60)) is None
    assert curriculum.stop_reason(RunState(elapsed_s=10 * 60)) == "minutes"


def test_the_trials_budget_cuts_the_last_iteration_and_ends_the_run_on_it():
    """budget.trials: synthesis trials come out of an iteration's plan (down to half of it), and
    no iteration explores past what is left of the run's trials; the run stops on reaching it."""
    tree = SkillTree.from_config({"scoop": {}})
    state = RunState(trials=10_000)
    left = Curriculum(tree, run_budget(iterations=100)).trials_left(state)
    assert [trials_left(300, v, left) for v in (0, 100, 250)] == [300, 200, 150]
    curriculum = Curriculum(tree, run_budget(iterations=100, trials=1_500))
    state = RunState(trials=1_300)
    assert [trials_left(300, v, curriculum.trials_left(state)) for v in (0, 100, 250)] == [200, 100, 0]
    assert curriculum.stop_reason(state) is None
    assert curriculum.stop_reason(RunState(trials=1_500)) == "trials"
    with pytest.raises(ValueError, match="budget.trials=0 must be >= 1"):
        run_budget(trials=0)


def test_consolidating_a_mastered_node_fine_tunes_the_kept_policy(tmp_path, scooping_weights):
    """With refit, an active node's training clones a fresh policy (its own normalisation, all
    ``train.steps``); consolidating a forgotten mastered node fine-tunes a copy of the kept one
    (``finetune_steps``, the kept normalisation), which already holds the other skills."""
    from robo_coevolve.library import SkillLibrary

    tree = SkillTree.from_config({"scoop": {"mastery": 0.9}, "flip": {"requires": ["scoop"]}})
    settings = clone_config(
        refit=True, finetune_steps=3, fit=train_config(steps=5, batch_size=16, eval_every=5, progress=False)
    )
    curriculum = Curriculum(tree, run_budget(consolidate=True))
    library = SkillLibrary(tmp_path / "library")
    library.add(scripted_segments("scoop", 3) + scripted_segments("flip", 3, seed=1))
    kept = scooping_policy(scooping_weights)
    norm = {k: v.clone() for k, v in kept.state_dict().items() if k.endswith(("_mean", "_std"))}
    assert norm

    def trained(node: str) -> tuple[VLAPolicy, dict]:
        n = tree.node(node)
        rng = np.random.default_rng(0)
        consolidating = curriculum.consolidating(n)
        sets = data_sets(library, n, settings, consolidating)
        rehearsed = [rehearsal_data(library, a, settings, None) for a in curriculum.kept(n)]
        cloner = Cloner(
            settings, CONFIG, kept, n, 2, sets, rehearsed, rng, tmp_path, consolidating=consolidating
        )
        ((policy, fit),), names = cloner(0)
        assert policy is not kept and names == ["latest"]
        return policy, fit

    tree.record("scoop", 1, 0.95)  # flip active: a fresh clone
    policy, fit = trained("flip")
    assert fit["steps"] == 5
    assert any(not torch.equal(policy.state_dict()[k], v) for k, v in norm.items())
    tree.record("flip", 2, 0.95)
    tree.record("scoop", 2, 0.5)  # scoop forgotten: consolidation fine-tunes the kept policy
    assert curriculum.focus().name == "scoop"
    policy, fit = trained("scoop")
    assert fit["steps"] == 3
    assert all(torch.equal(policy.state_dict()[k], v) for k, v in norm.items())


def test_split_sources_clones_each_teacher_apart_and_rehearses_a_kept_node_from_its_own(tmp_path):
    """With ``split_sources`` a node's data sets are the latest ``max_segments`` segments of each
    teacher (the primitives', the first search's examples among them, and the policy's own);
    a kept node is rehearsed from the source its policy was last cloned from. Without, the
    latest segments whatever their source."""
    from dataclasses import replace

    from robo_coevolve.library import SkillLibrary

    def made_by(segment, source):
        return replace(segment, meta={**segment.meta, "source": {**segment.meta["source"], "source": source}})

    scoops = scripted_segments("scoop", 5)
    stored = [scoops[0], made_by(scoops[1], "primitive"), made_by(scoops[2], "policy")]
    stored += [made_by(scoops[3], "synthesis"), made_by(scoops[4], "adversary")]
    assert [segment_source(s.meta) for s in stored] == [
        "primitives",
        "primitives",
        "policy",
        "primitives",
        "policy",
    ]

    def seeds(segments):
        return [s.meta["source"]["seed"] for s in segments]

    tree = SkillTree.from_config({"scoop": {"mastery": 0.9}, "flip": {"requires": ["scoop"]}})
    curriculum = Curriculum(tree, run_budget())
    library = SkillLibrary(tmp_path / "library")
    library.add(stored)
    scoop = tree.node("scoop")

    def sizes(train: CloneConfig) -> dict[str, int]:
        sets = data_sets(library, scoop, train, curriculum.consolidating(scoop))
        return {k: len(v) for k, v in sets.items()}

    train = clone_config(select_episodes=5, split_sources=True, max_segments=2)
    sets = data_sets(library, scoop, train, curriculum.consolidating(scoop))
    assert list(sets) == ["primitives", "policy"]
    assert seeds(sets["primitives"]) == seeds(stored[1:2] + stored[3:4])  # the latest two
    assert seeds(sets["policy"]) == seeds(stored[2:3] + stored[4:5])
    # no source recorded yet: the latest
    assert seeds(rehearsal_data(library, scoop, train, None)) == seeds(stored[3:])
    # what flip's training rehearses once scoop's policy was cloned from the policy's own
    assert seeds(rehearsal_data(library, scoop, train, "policy")) == seeds(sets["policy"])
    train = clone_config(select_episodes=5, max_segments=2)
    assert seeds(data_sets(library, scoop, train, False)["latest"]) == seeds(stored[3:])
    assert seeds(rehearsal_data(library, scoop, train, "policy")) == seeds(stored[3:])  # not split
    # min_source_segments: the policy's 2 are too few beside the primitives' 3, all 5 are not
    library.add([made_by(s, "primitive") for s in scripted_segments("scoop", 1, seed=7)])
    split = dict(select_episodes=5, split_sources=True, max_segments=5)
    assert sizes(clone_config(**split, min_source_segments=3)) == {"primitives": 4}
    assert sizes(clone_config(**split, min_source_segments=5)) == {"primitives": 4, "policy": 2}
    tree.record("scoop", 1, 0.95)  # mastered: training it now consolidates (a fine-tune), exempt
    assert sizes(clone_config(**split, min_source_segments=3)) == {"primitives": 4, "policy": 2}
    with pytest.raises(ValueError, match="min_source_segments=-1"):
        clone_config(min_source_segments=-1)
    with pytest.raises(ValueError, match=r"train.workers=0 must be >= 1, or null for one per core"):
        clone_config(workers=0)
    assert clone_config(workers=None).workers >= 1  # null: one per core


def test_pool_tasks_break_a_tie_on_the_node_own_tasks(monkeypatch):
    """coevolve.select_episodes: a new clone that only ties the current policy on the node's own
    selection tasks (both 100%) does not replace it when it does worse on tasks drawn from the
    node's pool (the adversarial preset's seed 0 lost 14 points on the hard set that way); a
    clone better there replaces it. Off, or with only the node's own distribution in the pool,
    the tie goes to the clone as before."""
    from types import SimpleNamespace

    import robo_coevolve.evolve.selection as selection_module
    from robo_coevolve.coevolve import PoolEntry, TaskPool, TaskSynthesizer
    from robo_coevolve.evolve.config import CoEvolveConfig
    from robo_coevolve.task_distribution import TaskDistribution

    tree = SkillTree.from_config({"scoop": {"mastery": 0.9}})
    scoop = tree.node("scoop")
    current, clone = object(), object()
    pool_rates = {id(current): 0.8, id(clone): 0.5}
    drawn = []

    def run_tasks(policy, tasks, backend):
        drawn.append([t.egg_mass for t in tasks])
        return SimpleNamespace(success_rate=pool_rates[id(policy)])

    perfect = SimpleNamespace(success_rate=1.0)  # both on the node's own selection tasks
    monkeypatch.setattr(selection_module, "evaluate_policy", lambda policy, dist, backend, n, seed: perfect)
    monkeypatch.setattr(selection_module, "evaluate_tasks", run_tasks)

    def selected(select_episodes: int, variants: bool) -> dict:
        pool = TaskPool.seeded(scoop.distribution())
        if variants:
            pool.add(PoolEntry(TaskDistribution.for_skill("scoop", egg_mass=0.08), weight=1.0))
        on = tasks(tree, "scoop", 4, 5, pool=pool, pool_episodes=select_episodes)
        return select([(clone, FIT)], current, on, None, new_stage=False)[2]

    result = selected(select_episodes=6, variants=True)
    assert result["taken"] is None and result["current"] == {"scoop": 1.0, pool_key("scoop"): 0.8}
    assert result["candidates"] == [{"scoop": 1.0, pool_key("scoop"): 0.5}]
    assert len(drawn) == 2 and drawn[0] == drawn[1] and len(drawn[0]) == 6  # the same tasks for both
    assert any(m > 0.061 for m in drawn[0])  # drawn from the pool's variants, not only the node's own
    pool_rates[id(clone)] = 0.9
    assert selected(select_episodes=6, variants=True)["taken"] == 0
    pool_rates[id(clone)] = 0.5
    for episodes, variants in ((0, True), (6, False)):
        drawn.clear()
        result = selected(select_episodes=episodes, variants=variants)
        assert result["taken"] == 0 and result["current"] == {"scoop": 1.0} and not drawn
    with pytest.raises(ValueError, match="select_episodes needs coevolve.synthesizer"):
        CoEvolveConfig(select_episodes=5)
    with pytest.raises(ValueError, match="select_episodes must be >= 0"):
        CoEvolveConfig(synthesizer=TaskSynthesizer(), select_episodes=-1)
