"""The skill tree unlocks a node when its prerequisites are mastered and refuses bad trees."""

import pytest

from robo_coevolve.skill_tree import ACTIVE, LOCKED, MASTERED, SkillTree, SkillTreeError
from robo_coevolve.task_spec import INSTRUCTIONS

NODES = {
    "catch": {"requires": ["flip"], "mastery": 0.8},
    "scoop": {"requires": [], "mastery": 0.9},
    "flip": {"requires": ["scoop"], "mastery": 0.9},
    "flip_heavy": {"skill": "flip", "requires": ["flip"], "tasks": {"egg_mass_range": 0.5}},
}


def test_nodes_unlock_in_dependency_order_and_stay_mastered():
    tree = SkillTree.from_config(NODES)
    assert [n.name for n in tree.nodes] == ["scoop", "flip", "catch", "flip_heavy"]  # prerequisites first
    assert tree.status == {"scoop": ACTIVE, "flip": LOCKED, "catch": LOCKED, "flip_heavy": LOCKED}
    assert tree.node("flip").instruction == INSTRUCTIONS["flip"]
    assert tree.node("flip_heavy").distribution().egg_mass_range == 0.5
    assert [n.name for n in tree.ancestors("catch")] == ["scoop", "flip"]
    assert not tree.record("scoop", 1, 0.85)  # below 0.9
    assert tree.record("scoop", 2, 0.9)
    assert [n.name for n in tree.active] == ["flip"]
    assert tree.record("flip", 3, 0.95)
    assert [n.name for n in tree.active] == ["catch", "flip_heavy"]  # both children of flip
    assert not tree.record("scoop", 3, 0.1)  # forgetting is recorded, mastery is not revoked
    assert tree.status["scoop"] == MASTERED and tree.latest_success("scoop") == 0.1
    assert not tree.is_mastered() and tree.is_mastered(["scoop", "flip"])
    assert [n.name for n in tree.regressed] == ["scoop"]  # mastered, now below its 0.9
    tree.record("scoop", 4, 0.9)
    assert tree.regressed == []

    again = SkillTree.from_config(NODES)
    again.load_progress(tree.to_dict())
    assert again.status == tree.status and again.history == tree.history


@pytest.mark.parametrize(
    "nodes, words",
    [
        ({"scoop": {"requires": ["flop"]}}, ["unknown node", "flop"]),
        (
            {"a": {"skill": "scoop", "requires": ["b"]}, "b": {"skill": "flip", "requires": ["a"]}},
            ["cycle", "a -> b -> a"],
        ),
        ({"juggle": {}}, ["juggle", "choose one of"]),
        ({"scoop": {"mastery": 1.5}}, ["mastery=1.5"]),
        ({"scoop": {"tasks": {"egg_mass_range": 2.0}}}, ["scoop", "egg_mass_range"]),
        ({"scoop": {"tasks": {"wobble": 1}}}, ["scoop", "wobble"]),
        ({}, ["empty"]),
    ],
)
def test_bad_trees_are_refused_naming_the_problem(nodes, words):
    with pytest.raises(SkillTreeError) as e:
        SkillTree.from_config(nodes)
    for w in words:
        assert w in str(e.value)


def test_progress_of_another_tree_is_refused():
    tree = SkillTree.from_config(NODES)
    other = SkillTree.from_config({"scoop": {}})
    with pytest.raises(SkillTreeError, match="resume with the skill_tree"):
        other.load_progress(tree.to_dict())
