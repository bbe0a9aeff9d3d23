"""The practice stage end to end (slow): practice lifts an under-trained clone, the gate keeps the
clone when practice made it worse, and a run killed mid-practice resumes to the same end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from bare_settings import train_config
from bench_commands import TINY
from run_killer import kill_when
from scripted_segments import scripted_segments

from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.learn import BCTrainer, ChunkDataset, evaluate_tasks
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.practice import PracticeConfig, RLConfig
from robo_coevolve.practice.stage import practise
from robo_coevolve.skill_tree import SkillNode

pytestmark = pytest.mark.slow

NODE = SkillNode("scoop")


@pytest.fixture(scope="module")
def under_trained() -> VLAPolicy:
    """A scoop clone stopped early: it scoops about half of its tasks."""
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_language=False, hidden=128))
    data = ChunkDataset.from_segments(scripted_segments("scoop", 24), policy.config.chunk)
    BCTrainer(policy, train_config(steps=100, batch_size=128, eval_every=150, progress=False)).fit(data)
    return policy.eval()


@pytest.fixture(scope="module")
def backend():
    with LocalBackend(workers=2) as b:
        yield b


def success(policy: VLAPolicy, backend) -> float:
    tasks = NODE.distribution().sample_many(np.random.default_rng(123), 100)
    return evaluate_tasks(policy, tasks, backend).success_rate


def test_practice_lifts_an_under_trained_clone(under_trained, backend):
    config = PracticeConfig(method="rl", episodes=768, weak_share=0.0, perturbed_share=0.0)
    practised, record = practise(under_trained, NODE, [], backend, config, np.random.default_rng(0))
    before, after = success(under_trained, backend), success(practised, backend)
    assert record["gate"]["kept"] == "practised" and practised is not under_trained
    assert after >= before + 0.15, (before, after, record["learn"]["updates"])


def test_the_gate_keeps_the_clone_when_practice_made_it_worse(under_trained, backend):
    wild = RLConfig(residual_scale=3.0, init_log_std=1.0, lr=1e-2, episodes_per_update=32, value_warmup=0)
    config = PracticeConfig(method="rl", episodes=64, gate_episodes=40, rl=wild)
    kept, record = practise(under_trained, NODE, [], backend, config, np.random.default_rng(0))
    gate = record["gate"]
    assert gate["practised"]["scoop"] < gate["clone"]["scoop"], gate
    assert gate["kept"] == "clone" and kept is under_trained


# The benchmarks' tiny run (one iteration that masters scoop at a token threshold), then practice.
PRACTISED = [
    *TINY,
    "train.fit.steps=300",
    "practice=rl",
    "practice.episodes=32",
    "practice.rl.episodes_per_update=16",
]


def command(run_dir: Path) -> list[str]:
    return [sys.executable, "-m", "robo_coevolve", f"hydra.run.dir={run_dir}", *PRACTISED]


def test_a_run_killed_mid_practice_resumes_to_the_same_end(tmp_path):
    whole = tmp_path / "whole"
    proc = subprocess.run(command(whole), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = [json.loads(line) for line in (whole / "metrics.jsonl").read_text().splitlines()]
    practice = row["practice"]
    assert practice["method"] == "rl" and practice["tasks"] == 32 and len(practice["learn"]["updates"]) == 2
    assert set(practice["gate"]["clone"]) == {"scoop"}
    assert (whole / "checkpoints" / "iter_0001_clone" / "model.safetensors").is_file()

    killed = tmp_path / "killed"
    kill_when(command(killed), killed / "checkpoints" / "iter_0001_clone" / "config.json")
    assert not (killed / "state.json").exists()
    resumed = subprocess.run(command(killed), capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    def strip(line: str) -> dict:
        d = json.loads(line)
        d.pop("seconds"), d["practice"].pop("seconds"), d["train"].pop("seconds")
        learn = d["practice"]["learn"]
        learn.pop("seconds")
        for u in learn["updates"]:
            u.pop("seconds")
        return d

    assert strip((killed / "metrics.jsonl").read_text()) == strip((whole / "metrics.jsonl").read_text())
    for name in ("iter_0001", "iter_0001_clone"):
        a = VLAPolicy.from_pretrained(whole / "checkpoints" / name).state_dict()
        b = VLAPolicy.from_pretrained(killed / "checkpoints" / name).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), name
