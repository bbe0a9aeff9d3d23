"""Exports to robomimic's HDF5 and LeRobot v3.0, and ``robo-coevolve-export library``."""

import json
import subprocess
import sys

import h5py
import imageio.v2 as imageio
import numpy as np
import pyarrow.parquet as pq
import pytest

from robo_coevolve.library import SkillLibrary
from robo_coevolve.library.lerobot import export_lerobot
from robo_coevolve.library.robomimic import export_robomimic


@pytest.fixture(scope="module")
def library(tmp_path_factory, segments):
    """Three scoop and two flip segments."""
    lib = SkillLibrary(tmp_path_factory.mktemp("export") / "lib")
    lib.add(segments["scoop"] + segments["flip"][:2])
    return lib


def test_robomimic_export(tmp_path, library, segments):
    path = export_robomimic(library, tmp_path / "out" / "robomimic.hdf5", valid_fraction=0.4, seed=3)
    stored = segments["scoop"] + segments["flip"][:2]
    with h5py.File(path, "r") as f:
        assert set(f.keys()) == {"data", "mask"}
        data = f["data"]
        assert sorted(data.keys()) == [f"demo_{i}" for i in range(5)]
        assert data.attrs["total"] == sum(len(s) for s in stored)
        env_args = json.loads(data.attrs["env_args"])
        assert env_args["env_name"] == "robo_coevolve/EggFlip-v0"
        assert env_args["env_kwargs"]["control_hz"] == 50.0
        for i, seg in enumerate(stored):
            demo = data[f"demo_{i}"]
            t = len(seg)
            assert demo.attrs["num_samples"] == t
            assert demo.attrs["skill"] == seg.skill
            assert demo["actions"].shape == (t, 5)
            assert demo["rewards"].shape == demo["dones"].shape == (t,)
            assert demo["states"].shape == (t, seg.states.shape[1])
            assert demo["obs/proprio"].shape == demo["next_obs/proprio"].shape == (t, 15)
            assert demo["obs/egg"].shape == demo["next_obs/egg"].shape == (t, 13)
            np.testing.assert_array_equal(demo["actions"], seg.actions)
            np.testing.assert_array_equal(demo["next_obs/egg"], seg.egg[1:])
        masks = {k: [n.decode() for n in f["mask"][k][()]] for k in f["mask"]}
    assert sorted(masks["train"] + masks["valid"]) == [f"demo_{i}" for i in range(5)]
    assert not set(masks["train"]) & set(masks["valid"]) and len(masks["valid"]) == 2
    assert masks["scoop"] == ["demo_0", "demo_1", "demo_2"] and masks["flip"] == ["demo_3", "demo_4"]
    assert not list(path.parent.glob("*.tmp"))

    one = export_robomimic(library, tmp_path / "flip.hdf5", skills=["flip"])
    with h5py.File(one, "r") as f:
        assert len(f["data"]) == 2
        assert json.loads(f["data"].attrs["env_args"])["env_kwargs"]["skill"] == "flip"
        assert len(f["mask/valid"]) == 1
    with pytest.raises(ValueError, match="no segments of catch"):
        export_robomimic(library, tmp_path / "catch.hdf5", skills=["catch"])


def test_lerobot_export(tmp_path, library, segments):
    out = export_lerobot(library, tmp_path / "lerobot", image_size=32)
    stored = segments["scoop"] + segments["flip"][:2]
    lengths = [len(s) for s in stored]
    total = sum(lengths)
    info = json.loads((out / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0"
    assert (info["total_episodes"], info["total_frames"], info["total_tasks"]) == (5, total, 2)
    assert info["fps"] == 50 and info["splits"] == {"train": "0:5"}
    features = info["features"]
    assert features["observation.state"]["shape"] == [15]
    assert features["observation.environment_state"]["shape"] == [13]
    assert features["action"]["shape"] == [5]
    assert features["observation.images.policy"]["dtype"] == "video"
    assert features["observation.images.policy"]["shape"] == [32, 32, 3]

    frames = pq.read_table(out / "data" / "chunk-000" / "file-000.parquet").to_pydict()
    assert set(frames) == {k for k, v in features.items() if v["dtype"] != "video"}
    assert len(frames["index"]) == total and frames["index"] == list(range(total))
    episode_index = np.array(frames["episode_index"])
    np.testing.assert_array_equal(episode_index, np.repeat(np.arange(5), lengths))
    np.testing.assert_array_equal(frames["frame_index"], np.concatenate([np.arange(t) for t in lengths]))
    np.testing.assert_allclose(frames["timestamp"], np.array(frames["frame_index"]) / 50.0, rtol=1e-6)
    first_flip = lengths[0] + lengths[1] + lengths[2]
    np.testing.assert_array_equal(
        np.array(frames["observation.state"][first_flip:][: lengths[3]]), segments["flip"][0].proprio[:-1]
    )
    np.testing.assert_array_equal(np.array(frames["action"][: lengths[0]]), segments["scoop"][0].actions)
    assert sum(frames["next.done"]) == 5 and frames["next.done"][lengths[0] - 1]

    tasks = pq.read_table(out / "meta" / "tasks.parquet").to_pydict()
    assert tasks == {
        "task_index": [0, 1],
        "task": ["scoop the fried egg off the pan", "flip the fried egg over"],
    }
    episodes = pq.read_table(out / "meta" / "episodes" / "chunk-000" / "file-000.parquet").to_pydict()
    assert episodes["episode_index"] == list(range(5)) and episodes["length"] == lengths
    assert episodes["tasks"][3] == ["flip the fried egg over"]
    assert episodes["dataset_from_index"] == list(np.cumsum([0] + lengths[:-1]))
    assert episodes["dataset_to_index"] == list(np.cumsum(lengths))
    np.testing.assert_allclose(
        episodes["videos/observation.images.policy/to_timestamp"], np.cumsum(lengths) / 50
    )
    stats = json.loads((out / "meta" / "stats.json").read_text())
    np.testing.assert_allclose(
        stats["action"]["max"], np.concatenate([s.actions for s in stored]).max(axis=0)
    )
    assert np.array(stats["observation.images.policy"]["mean"]).shape == (3, 1, 1)

    video = out / "videos" / "observation.images.policy" / "chunk-000" / "file-000.mp4"
    reader = imageio.get_reader(video)
    shapes = [frame.shape for frame in reader]
    reader.close()
    assert len(shapes) == total and set(shapes) == {(32, 32, 3)}

    with pytest.raises(FileExistsError, match="not empty"):
        export_lerobot(library, out)
    assert export_lerobot(library, out, skills=["flip"], image_size=16, overwrite=True) == out
    assert json.loads((out / "meta" / "info.json").read_text())["total_episodes"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["lerobot"]  # no temporary directories left


def export(*args):
    return subprocess.run(
        [sys.executable, "-m", "robo_coevolve.cli.export", "library", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_export_command(tmp_path, library):
    done = export(
        library.root,
        "--robomimic",
        tmp_path / "rm.hdf5",
        "--lerobot",
        tmp_path / "lr",
        "--image-size",
        16,
        "--skills",
        "scoop",
    )
    assert done.returncode == 0, done.stderr
    assert "robomimic:" in done.stdout and "lerobot:" in done.stdout
    with h5py.File(tmp_path / "rm.hdf5", "r") as f:
        assert len(f["data"]) == 3
    assert json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())["total_episodes"] == 3

    missing = export(tmp_path / "no_such_library", "--robomimic", tmp_path / "x.hdf5")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == (
        f"error: skill library {tmp_path / 'no_such_library'} does not exist: give a library directory, "
        "e.g. RUN/library\n"
    )
    assert not (tmp_path / "no_such_library").exists()


def test_export_command_replaces_a_dataset_only_when_told(tmp_path, library):
    (tmp_path / "lr").mkdir()
    (tmp_path / "lr" / "notes.txt").write_text("mine")
    refused = export(library.root, "--lerobot", tmp_path / "lr", "--image-size", 16, "--skills", "flip")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (
        f"error: {tmp_path / 'lr'} exists and is not empty: pick a new directory or pass --overwrite\n"
    )
    assert (tmp_path / "lr" / "notes.txt").read_text() == "mine"
    done = export(
        library.root, "--lerobot", tmp_path / "lr", "--image-size", 16, "--skills", "flip", "--overwrite"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "lr" / "meta" / "info.json").read_text())["total_episodes"] == 2
