"""Policy selection in the loop: a newly trained policy replaces the current one only if it does as
well closed loop on the iteration's selection tasks, where both run."""

import pytest
import torch
from scripted_segments import scripted_segments

from robo_coevolve.evolve import ExploreSchedule
from robo_coevolve.evolve.loop import EvolutionLoop, SearchSettings, TrainSettings
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import SkillTree

CONFIG = PolicyConfig(use_image=False, use_egg_state=True, use_language=False, hidden=128)


@pytest.fixture(scope="module")
def scooping_weights():
    """Weights of a policy cloned from 16 scripted scoops (scoops most tasks)."""
    torch.manual_seed(0)
    policy = VLAPolicy(CONFIG)
    data = ChunkDataset.from_segments(scripted_segments("scoop", 16), CONFIG.chunk)
    BCTrainer(policy, TrainConfig(steps=600, batch_size=128, eval_every=100, progress=False)).fit(data)
    return {k: v.clone() for k, v in policy.state_dict().items()}


@pytest.fixture
def loop(tmp_path):
    tree = SkillTree.from_config({"scoop": {"requires": []}, "flip": {"requires": ["scoop"]}})
    with LocalBackend(workers=1) as backend:
        yield EvolutionLoop(
            tree,
            CONFIG,
            TrainSettings(select_episodes=10),
            ExploreSchedule(),
            SearchSettings(),
            refiner=None,
            backend=backend,
            output_dir=tmp_path,
        )


def random_policy() -> VLAPolicy:
    torch.manual_seed(1)
    return VLAPolicy(CONFIG)  # scoops nothing


def test_a_worse_candidate_is_rejected_and_the_current_policy_stays(loop, scooping_weights):
    loop.policy = random_policy()
    result = loop._select(loop.tree.node("scoop"), 2, scooping_weights, new_stage=False)
    assert result["candidate"] == {"scoop": 0.0} and result["current"]["scoop"] >= 0.5
    assert not result["taken"]
    assert all(torch.equal(v, scooping_weights[k]) for k, v in loop.policy.state_dict().items())


def test_a_better_candidate_is_taken_and_a_new_stage_always_is(loop, scooping_weights):
    loop.policy = random_policy()
    loop.policy.load_state_dict(scooping_weights)
    worse = {k: v.clone() for k, v in random_policy().state_dict().items()}
    result = loop._select(loop.tree.node("scoop"), 2, worse, new_stage=False)
    assert result["taken"] and result["candidate"]["scoop"] > result["current"]["scoop"] == 0.0
    assert all(torch.equal(v, scooping_weights[k]) for k, v in loop.policy.state_dict().items())
    result = loop._select(loop.tree.node("flip"), 3, scooping_weights, new_stage=True)
    assert result["taken"] and set(result["candidate"]) == {"flip", "scoop"}  # ancestors too


def test_selection_episodes_must_not_be_negative():
    with pytest.raises(ValueError, match="select_episodes"):
        TrainSettings(select_episodes=-1)
