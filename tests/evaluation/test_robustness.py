"""The robustness suite on a one-node stand-in run: every arm on the same held-out tasks."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from robo_coevolve.evaluation.perturbations import family
from robo_coevolve.evaluation.robustness import markdown, robustness, summary
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.skill_tree import SkillTree


@pytest.fixture(scope="module")
def run(tmp_path_factory, scoop_answer):
    """What the suite reads of a run: its directory, tree and each node's answer and modes."""
    tree = SkillTree([{"name": "scoop"}])
    nodes = {"scoop": {"best_params": scoop_answer.tolist(), "modes": [scoop_answer.tolist()]}}
    return SimpleNamespace(dir=tmp_path_factory.mktemp("run"), tree=tree, state=SimpleNamespace(nodes=nodes))


def policy(use_language):
    torch.manual_seed(0)
    return VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True, use_language=use_language))


def test_every_arm_runs_the_same_held_out_tasks_and_the_report_is_json(run):
    families = [family(n) for n in ("push on blade", "egg obs noise", "paraphrase")]
    arms = {"final": lambda node: [policy(True)], "blind": lambda node: [policy(False)]}
    with LocalBackend(workers=1) as backend:
        report = robustness(run, backend, families, policies=arms, tasks=2, oracle_trials=4)
    rows = json.loads(json.dumps(report))["skills"]["scoop"]
    assert list(rows) == ["none", "push on blade", "egg obs noise", "paraphrase"]
    assert set(rows["push on blade"]["success"]) == {"answer", "oracle", "final", "blind"}
    assert rows["push on blade"]["pushes fired"]["answer"] == 1.0  # the answer scoops: on the blade
    assert "pushes fired" not in rows["egg obs noise"]
    for row in rows.values():
        assert all(0.0 <= r <= 1.0 and r * 2 == pytest.approx(round(r * 2)) for r in row["success"].values())
        if "oracle" in row["success"]:  # the oracle starts from the answer: never below it
            assert row["success"]["oracle"] >= row["success"]["answer"]
    assert rows["none"]["success"]["answer"] == 1.0
    # the instruction families run only on instruction-conditioned policies, and no plan
    assert set(rows["paraphrase"]["success"]) == {"final"}
    assert set(rows["push on blade"]["policies"]["final"]) == {"% of oracle", "gap closed", "vs answer"}
    text = markdown(report)
    assert "### scoop" in text and "| push on blade |" in text and "final: gap closed" in text


def test_the_policy_figures_compare_it_with_the_answer_and_the_oracle():
    runs = {
        "answer": np.array([1, 0, 0, 0], bool),
        "oracle": np.array([1, 1, 1, 0], bool),
        "final": np.array([[1, 1, 0, 0]], bool),
        "BC once": np.array([[1, 0, 0, 0], [1, 1, 1, 1]], bool),
    }
    out = summary(runs)
    assert out["success"] == {"answer": 0.25, "oracle": 0.75, "final": 0.5, "BC once": 0.625}
    final = out["policies"]["final"]
    assert final["% of oracle"] == pytest.approx(0.5 / 0.75)
    assert final["gap closed"] == pytest.approx(0.5)  # 0.25 of the 0.5 between answer and oracle
    assert final["vs answer"]["margin"] == pytest.approx(0.25)
    assert "BC once" not in out["policies"]  # several clones: their mean is reported, no pairing
    level = summary({"answer": runs["oracle"], "oracle": runs["oracle"], "final": runs["final"]})
    assert level["policies"]["final"]["gap closed"] is None  # no gap to close
