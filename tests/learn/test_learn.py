"""The learner end to end at small scale: scripted segments -> dataset -> BC -> closed loop."""

import json

import numpy as np
import pytest
import torch

from robo_coevolve.env.egg_flip import EggFlipEnv
from robo_coevolve.explore.backend import LocalBackend
from robo_coevolve.explore.policies import command_as_action
from robo_coevolve.learn import BCTrainer, ChunkDataset, TrainConfig, evaluate_policy
from robo_coevolve.motion import scripted
from robo_coevolve.policy import PolicyConfig, VLAPolicy
from robo_coevolve.refine import Refiner
from robo_coevolve.task_distribution import TaskDistribution
from robo_coevolve.trajectory import run_motion


def scripted_segments(skill, n, seed=0):
    """Refined segments of the scripted motion on tasks from the skill's distribution."""
    rng = np.random.default_rng(seed)
    env = EggFlipEnv(skill=skill)
    trajs = []
    for task in TaskDistribution.for_skill(skill).sample_many(rng, n):
        env.reset(seed=task.seed, options={"task": task})
        trajs.append(run_motion(env, scripted.MOTIONS[skill], seed=task.seed))
    env.close()
    refiner = Refiner(novelty={"min_distance": 0.0})
    segments, _ = refiner.refine(trajs)
    refiner.close()
    return segments


@pytest.fixture(scope="module")
def scoop_segments():
    return scripted_segments("scoop", 24)


def test_dataset_targets_are_chunks_of_deltas_from_the_previous_command(scoop_segments):
    data = ChunkDataset.from_segments(scoop_segments[:3], chunk=4, image_size=32)
    seg = scoop_segments[0]
    t = len(seg)
    assert len(data) == sum(len(s) for s in scoop_segments[:3])
    assert data.image.shape == (len(data), 32, 32, 3) and data.image.dtype == np.uint8
    np.testing.assert_allclose(
        data.deltas[5, 2], seg.actions[7] - command_as_action(seg.proprio[5]), atol=1e-6
    )
    assert data.mask[t - 1].tolist() == [1, 0, 0, 0]  # the chunk runs past the segment's end
    assert not np.array_equal(data.image[0], data.image[t - 1])  # frames follow the stored states
    train, valid = data.split(0.34, np.random.default_rng(0))
    assert set(train.segment_index).isdisjoint(valid.segment_index) and len(train) + len(valid) == len(data)
    stats = data.statistics()
    assert stats["delta_mean"].shape == (4 * 5,) and np.isfinite(stats["delta_std"]).all()


def test_state_policy_cloned_from_a_small_library_scoops_closed_loop(scoop_segments, tmp_path):
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True, use_language=False, hidden=128))
    data = ChunkDataset.from_segments(scoop_segments, policy.config.chunk)
    fit = BCTrainer(
        policy, TrainConfig(steps=600, batch_size=128, eval_every=100, progress=False), tmp_path
    ).fit(data)
    assert fit["best_val_loss"] < fit["history"][0]["val_loss"]
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert lines and {"loss", "val_loss", "samples_per_s"} <= set(lines[0])
    assert (tmp_path / "best" / "config.json").is_file() and list((tmp_path / "tensorboard").iterdir())
    with LocalBackend(workers=1) as backend:
        result = evaluate_policy(policy, TaskDistribution.for_skill("scoop"), backend, n=20, seed=10_000)
    assert result.success_rate >= 0.6, result.reasons  # chance is 0: random smooth motion never scoops
    reloaded = VLAPolicy.from_pretrained(tmp_path / "best")
    obs = data.batch(np.arange(4))
    policy.reset(4), reloaded.reset(4)
    np.testing.assert_array_equal(policy.act(obs), reloaded.act(obs))


def test_rehearsal_batches_mix_the_earlier_skill(scoop_segments):
    flip = scripted_segments("flip", 6, seed=1)
    torch.manual_seed(0)
    policy = VLAPolicy(PolicyConfig(use_image=False, use_egg_state=True, hidden=64))
    scoop_data = ChunkDataset.from_segments(scoop_segments[:6], policy.config.chunk)
    flip_data = ChunkDataset.from_segments(flip, policy.config.chunk)
    fit = BCTrainer(policy, TrainConfig(steps=40, batch_size=64, eval_every=20, progress=False)).fit(
        flip_data, rehearsal=scoop_data
    )
    assert "rehearsal_val_loss" in fit["history"][-1]
    both = ChunkDataset.concat([scoop_data, flip_data])
    assert len(both) == len(scoop_data) + len(flip_data)
    assert len(np.unique(both.segment_index)) == len(np.unique(scoop_data.segment_index)) + len(flip)


def test_bad_training_settings_are_named():
    with pytest.raises(ValueError, match="train.steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="rehearsal_share"):
        TrainConfig(rehearsal_share=1.5)
    with pytest.raises(ValueError, match="library is empty"):
        ChunkDataset.from_segments([], chunk=4)
