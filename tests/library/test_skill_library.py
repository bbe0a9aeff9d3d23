"""The skill library stores segments exactly, in robomimic's layout, and refuses damaged files."""

import dataclasses
import json
import shutil

import h5py
import numpy as np
import pytest

from robo_coevolve.library import SCHEMA_VERSION, LibraryError, SkillLibrary
from robo_coevolve.segment import Segment

ARRAYS = ("states", "actions", "proprio", "egg", "sensors")


def assert_same(got: Segment, want: Segment) -> None:
    for key in ARRAYS:
        np.testing.assert_array_equal(getattr(got, key), getattr(want, key), err_msg=key)
        assert getattr(got, key).dtype == getattr(want, key).dtype, key
    assert got.task == want.task
    assert got.control_hz == want.control_hz
    assert got.disturbance == want.disturbance
    assert got.outcome == want.outcome
    assert got.meta == want.meta


@pytest.fixture
def library(tmp_path, segments):
    """A library of two scoop and two flip segments."""
    lib = SkillLibrary(tmp_path / "lib")
    lib.add([segments["scoop"][0], segments["flip"][0], segments["scoop"][1], segments["flip"][1]])
    return lib


def test_round_trip_of_two_skills_through_a_new_library_object(tmp_path, segments):
    lib = SkillLibrary(tmp_path / "lib")
    scoop, flip = segments["scoop"], segments["flip"]
    assert lib.add([scoop[0], flip[0], scoop[1]]) == [0, 0, 1]
    assert lib.add([flip[1], flip[2], scoop[2]]) == [1, 2, 2]  # indices continue per skill

    again = SkillLibrary(tmp_path / "lib", create=False)
    assert again.skills() == ["scoop", "flip"]
    assert again.verify() == {"scoop": 3, "flip": 3}
    for skill in ("scoop", "flip"):
        assert again.count(skill) == 3
        stored = again.segments(skill)
        for got, want in zip(stored, segments[skill], strict=True):
            assert_same(got, want)
        assert_same(again.segment(skill, 2), segments[skill][2])
        meta = again.metadata(skill)
        assert [m["index"] for m in meta] == [0, 1, 2]
        for m, want in zip(meta, segments[skill], strict=True):
            assert m["num_samples"] == len(want)
            assert m["task"] == want.task.to_dict()
            assert m["instruction"] == want.task.instruction
            assert m["outcome"] == want.outcome
            assert m["meta"] == want.meta
    assert again.metadata("flip")[0]["disturbance"]["force"] == list(segments["flip"][0].disturbance.force)
    assert again.metadata("scoop")[0]["disturbance"] is None


def test_the_file_is_in_robomimic_layout(library, segments):
    seg = segments["flip"][1]
    t = len(seg)
    with h5py.File(library.path("flip"), "r") as f:
        data = f["data"]
        assert list(data.keys()) == ["demo_0", "demo_1"]
        assert data.attrs["total"] == len(segments["flip"][0]) + t
        assert data.attrs["schema_version"] == SCHEMA_VERSION
        env_args = json.loads(data.attrs["env_args"])
        assert env_args["env_name"] == "robo_coevolve/EggFlip-v0"
        assert env_args["env_kwargs"] == {"skill": "flip", "control_hz": seg.control_hz}
        demo = data["demo_1"]
        assert demo.attrs["num_samples"] == t
        np.testing.assert_array_equal(demo["actions"], seg.actions)
        np.testing.assert_array_equal(demo["states"], seg.states[:-1])
        np.testing.assert_array_equal(demo["obs/proprio"], seg.proprio[:-1])
        np.testing.assert_array_equal(demo["next_obs/proprio"], seg.proprio[1:])
        np.testing.assert_array_equal(demo["obs/egg"], seg.egg[:-1])
        np.testing.assert_array_equal(demo["next_obs/egg"], seg.egg[1:])
        assert demo["rewards"].shape == demo["dones"].shape == (t,)
        assert demo["rewards"][-1] == 1.0 and not demo["rewards"][:-1].any()
        assert demo["dones"][-1] == 1 and not demo["dones"][:-1].any()
        assert demo.attrs["instruction"] == "flip the fried egg over"
        assert json.loads(demo.attrs["task"]) == seg.task.to_dict()


def test_missing_library_unknown_skill_and_bad_index(tmp_path, library):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        SkillLibrary(tmp_path / "nowhere", create=False)
    with pytest.raises(ValueError, match="unknown skill"):
        library.count("juggle")
    with pytest.raises(IndexError, match="out of range"):
        library.segment("scoop", 2)
    assert library.count("catch") == 0 and library.segments("catch") == [] and library.metadata("catch") == []


def test_add_validates_every_segment_before_writing(library, segments):
    seg = segments["scoop"][2]
    bad_meta = Segment(**{**vars(seg), "meta": {"model": object()}})
    with pytest.raises(ValueError, match="segment 1: outcome or meta is not JSON"):
        library.add([segments["flip"][2], bad_meta])
    narrow = Segment(**{**vars(seg), "proprio": seg.proprio[:, :14]})
    with pytest.raises(ValueError, match=r"segment 0: obs/proprio has shape \(60, 14\), expected \(60, 15\)"):
        library.add([narrow])
    slow = Segment(**{**vars(seg), "control_hz": 25.0})
    with pytest.raises(ValueError, match="one control rate"):
        library.add([segments["flip"][2], slow])
    assert library.count("scoop") == 2 and library.count("flip") == 2


def test_stale_temp_files_are_removed_on_open(library):
    stale = library.root / ".scoop.abc123.hdf5.tmp"
    stale.write_bytes(b"half a commit")
    SkillLibrary(library.root)
    assert not stale.exists()
    assert sorted(p.name for p in library.root.iterdir()) == [
        ".skill_library.lock",
        "flip.hdf5",
        "scoop.hdf5",
    ]


def assert_refused(root, path, *words):
    with pytest.raises(LibraryError) as info:
        SkillLibrary(root)
    message = str(info.value)
    assert "\n" not in message and str(path) in message, message
    for word in words:
        assert word in message, message
    return message


def test_random_bytes_over_part_of_the_file(library):
    path = library.path("scoop")
    raw = bytearray(path.read_bytes())
    n = len(raw)
    raw[n // 4 : n // 2] = (
        np.random.default_rng(0).integers(0, 256, n // 2 - n // 4, dtype=np.uint8).tobytes()
    )
    path.write_bytes(bytes(raw))
    assert_refused(library.root, path, "restore it from a backup or delete it")


def test_truncated_file(library):
    path = library.path("flip")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    assert_refused(library.root, path, "truncated or corrupt HDF5")


def test_not_a_library_file(library):
    path = library.path("scoop")
    path.unlink()
    with h5py.File(path, "w") as f:
        f.create_group("something_else")
    assert_refused(library.root, path, "not a robo_coevolve skill library")


@pytest.mark.parametrize("version, advice", [(SCHEMA_VERSION + 1, "upgrade"), (0, "re-export")])
def test_wrong_schema_version_says_so(library, version, advice):
    path = library.path("flip")
    with h5py.File(path, "r+") as f:
        f["data"].attrs["schema_version"] = version
    message = assert_refused(library.root, path, f"schema version {version}", advice)
    assert f"reads schema version {SCHEMA_VERSION}" in message


def test_a_flipped_data_byte_is_caught_by_the_checksum(library):
    path = library.path("scoop")
    with h5py.File(path, "r") as f:
        offset = f["data/demo_1/final_state"].id.get_offset()  # contiguous, uncompressed
    raw = bytearray(path.read_bytes())
    raw[offset + 3] ^= 0x10
    path.write_bytes(bytes(raw))
    with h5py.File(path, "r") as f:
        f["data/demo_1/final_state"][()]  # still reads: only the checksum can tell
    assert_refused(library.root, path, "demo_1 fails its crc32 check")


def test_damage_after_open_is_found_by_verify_and_reads(library):
    path = library.path("flip")
    backup = path.with_name("backup")
    shutil.copyfile(path, backup)
    with h5py.File(path, "r+") as f:
        f["data"].attrs["total"] = 1
    with pytest.raises(LibraryError, match="data attr total = 1"):
        library.verify()
    shutil.copyfile(backup, path)
    with h5py.File(path, "r+") as f:
        f["data/demo_0/actions"][0, 0] += 0.5
    with pytest.raises(LibraryError, match="demo_0 fails its crc32 check"):
        library.segment("flip", 0)
    shutil.copyfile(backup, path)
    with h5py.File(path, "r+") as f:
        del f["data/demo_1/sensors"]
    with pytest.raises(LibraryError, match="demo_1 lacks sensors"):
        library.verify()


def test_truncate_rolls_back_to_a_file_equal_to_one_that_never_held_the_rest(tmp_path, segments):
    scoop = segments["scoop"]
    lib = SkillLibrary(tmp_path / "lib")
    lib.add(scoop[:1])
    before = lib.path("scoop").stat().st_size
    lib.add(scoop[1:3])
    assert lib.truncate("scoop", 5) == 0  # nothing beyond the end
    assert lib.truncate("scoop", 1) == 2
    again = SkillLibrary(tmp_path / "lib", create=False)
    assert again.verify() == {"scoop": 1}
    assert_same(again.segment("scoop", 0), scoop[0])
    assert again.path("scoop").stat().st_size <= before * 1.05  # the removed demos' bytes are gone
    assert again.add([scoop[2]]) == [1]  # appending continues from the kept ones
    assert_same(again.segment("scoop", 1), scoop[2])
    assert again.truncate("scoop", 0) == 2
    assert again.skills() == [] and again.count("scoop") == 0
    with pytest.raises(ValueError, match="count"):
        again.truncate("scoop", -1)


def test_segments_can_read_only_the_last_ones_or_those_asked_for(library, segments):
    assert [len(s) for s in library.segments("scoop", last=1)] == [len(segments["scoop"][1])]
    assert len(library.segments("scoop", last=5)) == 2 and library.segments("catch", last=1) == []
    picked = library.segments("scoop", indices=[1, 0])
    assert [len(s) for s in picked] == [len(segments["scoop"][1]), len(segments["scoop"][0])]
    assert library.segments("scoop", indices=[]) == []
    with pytest.raises(IndexError, match="out of range"):
        library.segments("scoop", indices=[2])
    with pytest.raises(ValueError, match="not both"):
        library.segments("scoop", last=1, indices=[0])


def file_bytes(lib: SkillLibrary, skill: str) -> bytes:
    return lib.path(skill).read_bytes()


def test_rolling_back_the_last_commit_then_redoing_it_gives_the_same_bytes(tmp_path, segments):
    scoop = segments["scoop"]
    direct = SkillLibrary(tmp_path / "direct")
    direct.add(scoop[:1])
    one = file_bytes(direct, "scoop")
    direct.add(scoop[1:])
    resumed = SkillLibrary(tmp_path / "resumed")
    resumed.add(scoop[:1])
    resumed.add(scoop[1:])  # the interrupted iteration's commit
    assert SkillLibrary(resumed.root).truncate("scoop", 1) == 2
    assert file_bytes(resumed, "scoop") == one
    resumed.add(scoop[1:])  # the iteration redone
    assert file_bytes(resumed, "scoop") == file_bytes(direct, "scoop")
    assert resumed.digest() == direct.digest()


def test_a_deeper_rollback_compacts_to_the_same_content_digest(tmp_path, segments):
    scoop, flip = segments["scoop"], segments["flip"]
    direct = SkillLibrary(tmp_path / "direct")
    direct.add([scoop[0], flip[0]])
    direct.add([scoop[1]])
    lib = SkillLibrary(tmp_path / "lib")
    lib.add([scoop[0], flip[0]])
    for segment in scoop[1:]:
        lib.add([segment])  # two commits past the one kept aside
    assert lib.truncate("scoop", 1) == 2  # not the last commit: compacted, not restored
    assert lib.digest() != direct.digest()
    lib.add([scoop[1]])
    assert lib.digest() == direct.digest()
    assert_same(lib.segment("scoop", 1), scoop[1])


def test_a_damaged_previous_version_is_not_restored(tmp_path, segments):
    scoop = segments["scoop"]
    lib = SkillLibrary(tmp_path / "lib")
    lib.add(scoop[:1])
    want = lib.digest()
    lib.add(scoop[1:])
    (lib.root / ".scoop.hdf5.previous").write_bytes(b"not an hdf5 file")  # the version kept aside
    assert lib.truncate("scoop", 1) == 2
    assert lib.digest() == want and lib.verify() == {"scoop": 1}


def test_the_digest_changes_with_any_array_attr_or_order(tmp_path, segments):
    scoop = segments["scoop"]
    digests = set()
    for name, batch in {
        "a": scoop[:2],
        "swapped": scoop[1::-1],
        "meta": [scoop[0], dataclasses.replace(scoop[1], meta={"other": 1})],
    }.items():
        lib = SkillLibrary(tmp_path / name)
        lib.add(batch)
        digests.add(lib.digest())
    lib = SkillLibrary(tmp_path / "a")
    with h5py.File(lib.path("scoop"), "r+") as f:
        f["data/demo_1/rewards"][-1] = 0.5  # same crc32 field, changed data: caught when read
    with pytest.raises(LibraryError, match="crc32"):
        lib.digest()
    assert len(digests) == 3 and len(SkillLibrary(tmp_path / "empty").digest()) == 64
