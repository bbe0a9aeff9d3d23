"""SkillLibrary: the proven segments of every skill, one HDF5 file per skill in robomimic's layout.

``<root>/<skill>.hdf5`` holds group ``data`` (attrs ``total``, ``env_args``, ``schema_version``,
``skill``) with one group ``data/demo_<i>`` per segment, numbered in insertion order. Each demo
has robomimic's datasets (``actions``, ``rewards``, ``dones``, ``states``, ``obs/*``,
``next_obs/*``, attr ``num_samples``) so robomimic and anything that reads its files can train on
the library directly, plus what rebuilds the ``Segment`` exactly: ``final_state``, ``sensors``
and attrs ``task``, ``instruction``, ``control_hz``, ``disturbance``, ``outcome``, ``meta`` (JSON)
and ``crc32``, a checksum of the demo's arrays and JSON attrs.

Writes are atomic: a commit copies the live file to a temporary file in the same directory,
appends to the copy, fsyncs it and renames it over the live file, so a crash at any moment leaves
either the old or the new version, each complete. The version a commit replaced is kept aside
(``.<skill>.hdf5.previous``), so rolling that commit back restores its very bytes (HDF5 writes no
timestamps here, so the same commits give the same bytes). Writers serialise on a lock file, so
concurrent processes can add to one library without losing each other's segments. Opening a
library removes temporary files left by killed writers and checks every file (structure, schema
version, checksums); a damaged file raises ``LibraryError`` with a one-line message naming it.
``digest`` hashes the content, whatever the files' layout, for comparing runs.

One module, over 500 lines, because the file format is one thing: the layout written, the checks
that read it back and the atomic commit and rollback all change together.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from robo_coevolve import ENV_ID
from robo_coevolve.atomic import file_aside, fsync_path
from robo_coevolve.env.initial_state import Disturbance
from robo_coevolve.segment import Segment
from robo_coevolve.task_spec import SKILLS, TaskSpec

# 2: the scene gained the serving plate (its body widens the MuJoCo state, its contact sensor the
# sensor rows), so states and sensors of version 1 no longer fit the scene.
SCHEMA_VERSION = 2
# robomimic's EnvType.GYM_TYPE: its EnvGym wrapper builds the env with gym.make(env_name, **env_kwargs).
ROBOMIMIC_GYM_TYPE = 2
SUFFIX = ".hdf5"
TMP_SUFFIX = ".hdf5.tmp"
PREVIOUS_SUFFIX = ".hdf5.previous"  # ".<skill>.hdf5.previous": the file before its last commit
LOCK_NAME = ".skill_library.lock"

# dataset name -> (dtype, trailing shape; None = any width). All have num_samples rows except
# final_state, the state after the last action.
DATASETS: dict[str, tuple[np.dtype, tuple[int | None, ...]]] = {
    "actions": (np.dtype(np.float32), (5,)),
    "rewards": (np.dtype(np.float64), ()),
    "dones": (np.dtype(np.int64), ()),
    "states": (np.dtype(np.float64), (None,)),
    "obs/proprio": (np.dtype(np.float32), (15,)),
    "obs/egg": (np.dtype(np.float32), (13,)),
    "next_obs/proprio": (np.dtype(np.float32), (15,)),
    "next_obs/egg": (np.dtype(np.float32), (13,)),
    "sensors": (np.dtype(np.float64), (None,)),
    "final_state": (np.dtype(np.float64), (None,)),
}
JSON_ATTRS = ("task", "disturbance", "outcome", "meta")
DEMO_ATTRS = ("num_samples", "instruction", "control_hz", "crc32", *JSON_ATTRS)
# gzip + shuffle halves the files (sim states are half zeros) and so the copy every commit makes.
_COMPRESSION = dict(compression="gzip", compression_opts=4, shuffle=True)


class LibraryError(ValueError):
    """A skill-library file is unreadable, damaged or of another schema; the message is one line
    naming the file and what to do."""


class SkillLibrary:
    """A directory of skill files (``<root>/<skill>.hdf5``).

    Args:
        root: the library directory.
        create: make ``root`` if it does not exist (else raise ``FileNotFoundError``).

    Opening checks every existing skill file (see ``verify``), which reads all of it.
    """

    def __init__(self, root: str | Path, create: bool = True):
        self.root = Path(root)
        if not self.root.exists():
            if not create:
                raise FileNotFoundError(
                    f"skill library {self.root} does not exist: check the path or create it with "
                    "SkillLibrary(root, create=True)"
                )
            self.root.mkdir(parents=True)
        elif not self.root.is_dir():
            raise NotADirectoryError(f"skill library {self.root} is not a directory")
        self._remove_stale_temps()
        self.verify()

    # ------------------------------------------------------------------ reading
    def path(self, skill: str) -> Path:
        """The file of ``skill`` (which may not exist yet)."""
        if skill not in SKILLS:
            raise ValueError(f"unknown skill {skill!r}: choose one of {', '.join(SKILLS)}")
        return self.root / f"{skill}{SUFFIX}"

    def skills(self) -> list[str]:
        """The skills that have a file, in ``SKILLS`` order."""
        return [s for s in SKILLS if self.path(s).is_file()]

    def count(self, skill: str) -> int:
        """Number of segments of ``skill`` (0 when it has no file)."""
        with self._reading(skill) as data:
            return 0 if data is None else _demo_count(data)

    def metadata(self, skill: str) -> list[dict[str, Any]]:
        """Per-segment metadata without loading arrays: ``index``, ``num_samples``, ``task``
        (dict), ``instruction``, ``control_hz``, ``disturbance`` (dict or None), ``outcome``,
        ``meta``."""
        with self._reading(skill) as data:
            if data is None:
                return []
            out = []
            for i in range(_demo_count(data)):
                attrs = data[f"demo_{i}"].attrs
                out.append(
                    {
                        "index": i,
                        "num_samples": int(attrs["num_samples"]),
                        "instruction": str(attrs["instruction"]),
                        "control_hz": float(attrs["control_hz"]),
                        **{k: json.loads(attrs[k]) for k in JSON_ATTRS},
                    }
                )
            return out

    def segment(self, skill: str, index: int) -> Segment:
        """Segment ``index`` of ``skill``."""
        with self._reading(skill) as data:
            n = 0 if data is None else _demo_count(data)
            if not 0 <= index < n:
                raise IndexError(f"{skill} has {n} segment(s) in {self.root}: index {index} is out of range")
            return _load_demo(data[f"demo_{index}"], self.path(skill))

    def segments(
        self, skill: str, last: int | None = None, indices: Iterable[int] | None = None
    ) -> list[Segment]:
        """Every segment of ``skill`` in insertion order, or only the ``last`` ones, or those at
        ``indices`` (in the order given; reads only those)."""
        if last is not None and indices is not None:
            raise ValueError("SkillLibrary.segments: give last or indices, not both")
        with self._reading(skill) as data:
            n = 0 if data is None else _demo_count(data)
            if indices is None:
                indices = range(0 if last is None else max(0, n - last), n)
            out = []
            for i in indices:
                if not 0 <= i < n:
                    raise IndexError(f"{skill} has {n} segment(s) in {self.root}: index {i} is out of range")
                out.append(_load_demo(data[f"demo_{i}"], self.path(skill)))
            return out

    def verify(self) -> dict[str, int]:
        """Check every skill file (opens as HDF5, schema version, datasets and their lengths,
        checksums, ``total``); returns the segment count per skill, raises ``LibraryError``."""
        return {skill: check_file(self.path(skill), skill) for skill in self.skills()}

    # ------------------------------------------------------------------ writing
    def add(self, segments: Iterable[Segment]) -> list[int]:
        """Append ``segments`` to their skills' files; returns each one's demo index, in order.

        Every segment is validated before anything is written. Each skill file then gets one
        atomic commit, so a crash leaves every skill either with all of its new segments or
        none (skills committed before the crash keep theirs).
        """
        prepared = [_prepare(s, k) for k, s in enumerate(segments)]
        by_skill: dict[str, list[int]] = {}
        for k, demo in enumerate(prepared):
            by_skill.setdefault(demo["skill"], []).append(k)
        indices = [0] * len(prepared)
        with self._write_lock():
            for skill, positions in by_skill.items():
                self._check_rate(skill, [prepared[k] for k in positions])
            for skill, positions in by_skill.items():
                first = self._commit(skill, [prepared[k] for k in positions])
                for j, k in enumerate(positions):
                    indices[k] = first + j
        return indices

    def truncate(self, skill: str, count: int) -> int:
        """Keep only the first ``count`` segments of ``skill`` (a resumed run rolls back what an
        interrupted iteration stored); returns how many were removed.

        Rolling back the last commit restores the file it replaced (kept aside for this), so the
        file is byte for byte the one that never held the removed demos and the same commits
        after it give the same bytes again. Otherwise the kept demos are copied into a fresh,
        compact file of the same content (``digest``), which replaces the old one atomically."""
        if count < 0:
            raise ValueError(f"truncate count={count} must be >= 0")
        with self._write_lock():
            n = self.count(skill)
            if count >= n:
                return 0
            path, previous = self.path(skill), self._previous(skill)
            if count == 0:
                path.unlink()
                previous.unlink(missing_ok=True)
            elif self._is_prefix(previous, skill, count):
                os.replace(previous, path)
            else:
                previous.unlink(missing_ok=True)
                with file_aside(path) as tmp, h5py.File(path, "r") as src, h5py.File(tmp, "w") as dst:
                    data = dst.create_group("data")
                    for key, value in src["data"].attrs.items():
                        data.attrs[key] = value
                    total = 0
                    for i in range(count):
                        src.copy(src[f"data/demo_{i}"], data, name=f"demo_{i}")
                        total += int(data[f"demo_{i}"].attrs["num_samples"])
                    data.attrs["total"] = total
            fsync_path(self.root)
            return n - count

    def digest(self) -> str:
        """sha256 of the library's content: every skill's file header and every demo's arrays
        (dtype, shape, bytes) and attrs, in a canonical order. Equal libraries have equal digests
        whatever their files' layout, so runs compare by it."""
        h = hashlib.sha256()
        for skill in self.skills():
            with self._reading(skill) as data:
                h.update(f"skill {skill}\n".encode())
                _hash_attrs(h, data.attrs)
                for i in range(_demo_count(data)):
                    demo = data[f"demo_{i}"]
                    arrays, _ = _read_checked(demo, f"demo_{i}", self.path(skill))
                    h.update(f"demo {i}\n".encode())
                    for key in sorted(arrays):
                        a = np.ascontiguousarray(arrays[key])
                        h.update(f"{key}:{a.dtype.str}:{a.shape}\n".encode())
                        h.update(a.tobytes())
                    _hash_attrs(h, demo.attrs)
        return h.hexdigest()

    def _check_rate(self, skill: str, demos: list[dict[str, Any]]) -> None:
        rates = {d["attrs"]["control_hz"] for d in demos}
        with self._reading(skill) as data:
            if data is not None:
                rates.add(float(json.loads(data.attrs["env_args"])["env_kwargs"]["control_hz"]))
        if len(rates) > 1:
            raise ValueError(
                f"{skill} segments at {sorted(rates)} Hz cannot share {self.path(skill)}: a skill file "
                "holds one control rate (its env_args describe one env)"
            )

    def _commit(self, skill: str, demos: list[dict[str, Any]]) -> int:
        """Append ``demos`` to a copy of the skill's file and rename it into place, keeping the
        version it replaces aside for ``truncate``; returns the index of the first."""
        path = self.path(skill)
        with file_aside(path) as tmp:
            if path.exists():
                shutil.copyfile(path, tmp)
                # Every demo was checked on open (and a concurrent writer only adds whole ones);
                # re-checking each would make a commit's cost grow with the library.
                first = check_file(tmp, skill, demos=False, name=path)
                mode = "r+"
            else:
                first, mode = 0, "w"
            with h5py.File(tmp, mode) as f:
                if mode == "w":
                    data = f.create_group("data")
                    data.attrs["schema_version"] = SCHEMA_VERSION
                    data.attrs["skill"] = skill
                    data.attrs["env_args"] = json.dumps(env_args(skill, demos[0]["attrs"]["control_hz"]))
                    data.attrs["total"] = 0
                data = f["data"]
                for j, demo in enumerate(demos):
                    _write_demo(data.create_group(f"demo_{first + j}"), demo)
                added = sum(d["attrs"]["num_samples"] for d in demos)
                data.attrs["total"] = int(data.attrs["total"]) + added
            self._keep_previous(skill)
        return first

    def _previous(self, skill: str) -> Path:
        """Where the version of the skill's file before its last commit is kept."""
        return self.root / f".{skill}{PREVIOUS_SUFFIX}"

    def _keep_previous(self, skill: str) -> None:
        """Keep the skill's live file as its previous version: a hard link (the commit renames a
        new file over the live one and never changes it in place), or a copy where links fail."""
        path, previous = self.path(skill), self._previous(skill)
        if not path.exists():
            previous.unlink(missing_ok=True)
            return
        link = self.root / f".{skill}.previous{TMP_SUFFIX}"  # removed on open, like any temp
        link.unlink(missing_ok=True)
        try:
            os.link(path, link)
        except OSError:
            shutil.copyfile(path, link)
        os.replace(link, previous)

    def _is_prefix(self, previous: Path, skill: str, count: int) -> bool:
        """Whether ``previous`` holds exactly the first ``count`` demos of the live file (by their
        checksums and lengths)."""
        if not previous.is_file():
            return False
        try:
            with h5py.File(previous, "r") as f, self._reading(skill) as live:
                old = f["data"]
                return _demo_count(old) == count and all(
                    old[f"demo_{i}"].attrs[key] == live[f"demo_{i}"].attrs[key]
                    for i in range(count)
                    for key in ("crc32", "num_samples")
                )
        except (OSError, KeyError, LibraryError):
            return False  # a damaged previous version is no use: compact instead

    # ------------------------------------------------------------------ internals
    @contextlib.contextmanager
    def _reading(self, skill: str) -> Iterator[h5py.Group | None]:
        """The skill file's ``data`` group (None without a file), with h5py's errors on a damaged
        file turned into ``LibraryError``. The open handle keeps reading the version it opened
        even if a writer replaces the file meanwhile."""
        path = self.path(skill)
        if not path.is_file():
            yield None
            return
        with _translated_errors(path), h5py.File(path, "r") as f:
            yield f["data"]

    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        with open(self.root / LOCK_NAME, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _remove_stale_temps(self) -> None:
        """Delete temporary files of writers that died mid-commit. A writer holds the lock while
        its temporary file exists, so files found while holding the lock are stale."""
        try:
            lock = open(self.root / LOCK_NAME, "a")
        except OSError:
            return  # a read-only library has no writers to clean up after
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # a live writer's temporary file is not stale
            try:
                for skill in SKILLS:
                    for tmp in self.root.glob(f".{skill}.*{TMP_SUFFIX}"):
                        tmp.unlink(missing_ok=True)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def env_args(skill: str | None, control_hz: float) -> dict[str, Any]:
    """robomimic's ``env_args`` for our env (``skill`` None for a file of several skills)."""
    kwargs: dict[str, Any] = {"control_hz": float(control_hz)}
    if skill is not None:
        kwargs = {"skill": skill, **kwargs}
    return {"env_name": ENV_ID, "type": ROBOMIMIC_GYM_TYPE, "env_kwargs": kwargs}


def chosen_skills(library: SkillLibrary, skills: list[str] | None) -> list[str]:
    """The skills an export takes: ``skills`` without repeats (default: every skill the library
    has), each checked to have segments."""
    have = library.skills()
    skills = list(dict.fromkeys(have if skills is None else skills))
    for skill in skills:
        library.path(skill)  # raises on an unknown skill name
    empty = [s for s in skills if s not in have or library.count(s) == 0]
    if empty:
        raise ValueError(
            f"{library.root} has no segments of {', '.join(empty)} (it has {', '.join(have) or 'none'})"
        )
    if not skills:
        raise ValueError(f"{library.root} holds no segments: nothing to export")
    return skills


def check_file(path: Path, skill: str, demos: bool = True, name: Path | None = None) -> int:
    """Check the skill file at ``path`` (reported as ``name``); returns its segment count or
    raises ``LibraryError``. ``demos=False`` checks only the header and the demo names, not each
    demo's datasets, checksum and the ``total`` they add up to."""
    name = name or path
    with _translated_errors(name):
        try:
            f = h5py.File(path, "r")
        except OSError as exc:
            raise LibraryError(
                f"{name} is not a readable skill library (truncated or corrupt HDF5: {_short(exc)}); "
                "restore it from a backup or delete it"
            ) from None
        with f:
            data = f.get("data")
            if not isinstance(data, h5py.Group) or "schema_version" not in data.attrs:
                raise LibraryError(
                    f"{name} is an HDF5 file but not a robo_coevolve skill library (no data group with a "
                    "schema_version); move it out of the library directory"
                )
            version = int(data.attrs["schema_version"])
            if version != SCHEMA_VERSION:
                todo = (
                    "upgrade robo_coevolve to read it"
                    if version > SCHEMA_VERSION
                    else "re-export it with the robo_coevolve version that wrote it"
                )
                raise LibraryError(
                    f"{name} has skill-library schema version {version}, this robo_coevolve reads "
                    f"schema version {SCHEMA_VERSION}: {todo}"
                )
            if data.attrs.get("skill") != skill:
                raise LibraryError(
                    f"{name} holds skill {data.attrs.get('skill')!r}, not {skill!r}: rename it after the "
                    "skill it holds"
                )
            n = _demo_count(data, name)
            stored = int(data.attrs["total"])
            json.loads(data.attrs["env_args"])
            if demos:
                total = sum(_check_demo(data[f"demo_{i}"], f"demo_{i}", name) for i in range(n))
                if stored != total:
                    raise _corrupt(name, f"data attr total = {stored} but its demos hold {total} samples")
            return n


def _check_demo(demo: h5py.Group, label: str, name: Path) -> int:
    missing = [k for k in DATASETS if not isinstance(demo.get(k), h5py.Dataset)]
    missing += [k for k in DEMO_ATTRS if k not in demo.attrs]
    if missing:
        raise _corrupt(name, f"{label} lacks {', '.join(missing)}")
    t = int(demo.attrs["num_samples"])
    if t < 1:
        raise _corrupt(name, f"{label} has num_samples = {t}")
    for key, (dtype, _) in DATASETS.items():
        problem = _shape_problem(key, demo[key].shape, t, demo["states"].shape)
        if problem is None and demo[key].dtype != dtype:
            problem = f"{key} is {demo[key].dtype}, not {dtype}"
        if problem:
            raise _corrupt(name, f"{label}/{problem} (num_samples = {t})")
    _read_checked(demo, label, name)
    return t


def _shape_problem(key: str, shape: tuple, t: int, states: tuple) -> str | None:
    """What is wrong with dataset ``key`` of ``shape`` in a demo of ``t`` steps whose ``states``
    dataset has shape ``states`` (None if nothing)."""
    trailing = DATASETS[key][1]
    if key == "final_state":
        want = states[1:]
    elif len(shape) != 1 + len(trailing):
        return f"{key} has shape {shape}, expected {1 + len(trailing)} dimension(s)"
    else:
        want = (t, *(s if w is None else w for s, w in zip(shape[1:], trailing, strict=True)))
    return None if shape == want else f"{key} has shape {shape}, expected {want}"


def _demo_count(data: h5py.Group, name: Path | None = None) -> int:
    names = set(data.keys())
    n = len(names)
    if names != {f"demo_{i}" for i in range(n)}:
        odd = ", ".join(sorted(names - {f"demo_{i}" for i in range(n)})[:3])
        raise _corrupt(name or Path(data.file.filename), f"data holds {odd}, not only demo_0..demo_{n - 1}")
    return n


def _prepare(segment: Segment, position: int) -> dict[str, Any]:
    """The arrays and attrs of one demo, validated before anything is written."""
    if not isinstance(segment, Segment):
        raise TypeError(f"segment {position} is a {type(segment).__name__}, not a Segment")
    t = len(segment)
    if t < 1:
        raise ValueError(f"segment {position} has no actions: a demo needs at least one step")
    states, proprio, egg = segment.states, segment.proprio, segment.egg
    if np.ndim(states) != 2:
        raise ValueError(f"segment {position}: states has shape {np.shape(states)}, expected (T + 1, n)")
    rewards = np.zeros(t)
    rewards[-1] = float(segment.success)
    dones = np.zeros(t)
    dones[-1] = 1
    arrays = {
        "actions": segment.actions,
        "rewards": rewards,
        "dones": dones,
        "states": states[:-1],
        "final_state": states[-1],
        "obs/proprio": proprio[:-1],
        "next_obs/proprio": proprio[1:],
        "obs/egg": egg[:-1],
        "next_obs/egg": egg[1:],
        "sensors": segment.sensors,
    }
    arrays = {k: np.asarray(v, dtype=DATASETS[k][0]) for k, v in arrays.items()}
    for key in DATASETS:
        problem = _shape_problem(key, arrays[key].shape, t, arrays["states"].shape)
        if problem:
            raise ValueError(f"segment {position}: {problem}")
    dist = segment.disturbance
    try:
        text = {
            "task": segment.task.to_json(),
            "disturbance": _dumps(None if dist is None else vars(dist)),
            "outcome": _dumps(segment.outcome),
            "meta": _dumps(segment.meta),
        }
    except (TypeError, ValueError) as exc:
        raise ValueError(f"segment {position}: outcome or meta is not JSON-serialisable: {exc}") from exc
    attrs = {
        "num_samples": t,
        "instruction": segment.task.instruction,
        "control_hz": float(segment.control_hz),
        "crc32": _checksum(arrays, text),
        **text,
    }
    return {"skill": segment.skill, "arrays": arrays, "attrs": attrs}


def _write_demo(group: h5py.Group, demo: dict[str, Any]) -> None:
    for key, value in demo["arrays"].items():
        opts = _COMPRESSION if value.ndim == 2 else {}
        # No timestamps (h5py's default, stated because byte-identical rollbacks rely on it).
        group.create_dataset(key, data=value, track_times=False, **opts)
    for key, value in demo["attrs"].items():
        group.attrs[key] = value


def _read_checked(demo: h5py.Group, label: str, name: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A demo's arrays and JSON attrs, after checking them against its crc32."""
    arrays = {k: demo[k][()] for k in DATASETS}
    text = {k: str(demo.attrs[k]) for k in JSON_ATTRS}
    if _checksum(arrays, text) != int(demo.attrs["crc32"]):
        raise _corrupt(name, f"{label} fails its crc32 check (its data changed after it was written)")
    return arrays, text


def _load_demo(demo: h5py.Group, name: Path) -> Segment:
    arrays, text = _read_checked(demo, demo.name.rsplit("/", 1)[-1], name)
    dist = json.loads(text["disturbance"])
    if dist is not None:
        dist = Disturbance(dist["start"], dist["duration"], tuple(dist["force"]))
    return Segment(
        task=TaskSpec.from_json(text["task"]),
        control_hz=float(demo.attrs["control_hz"]),
        states=np.concatenate([arrays["states"], arrays["final_state"][None]]),
        disturbance=dist,
        actions=arrays["actions"],
        proprio=np.concatenate([arrays["obs/proprio"], arrays["next_obs/proprio"][-1:]]),
        egg=np.concatenate([arrays["obs/egg"], arrays["next_obs/egg"][-1:]]),
        sensors=arrays["sensors"],
        outcome=json.loads(text["outcome"]),
        meta=json.loads(text["meta"]),
    )


def _checksum(arrays: dict[str, np.ndarray], text: dict[str, str]) -> int:
    """zlib.crc32 over each array's name, dtype, shape and bytes and each JSON attr, in name order."""
    crc = 0
    for key in sorted(arrays):
        a = np.ascontiguousarray(arrays[key])
        crc = zlib.crc32(f"{key}:{a.dtype.str}:{a.shape}".encode(), crc)
        crc = zlib.crc32(a.tobytes(), crc)
    for key in sorted(text):
        crc = zlib.crc32(f"{key}={text[key]}".encode(), crc)
    return crc


def _hash_attrs(h: Any, attrs: h5py.AttributeManager) -> None:
    """Feed ``attrs`` into the hash ``h`` by name, each value as the Python value it holds."""
    for key in sorted(attrs):
        value = attrs[key]
        value = value.tolist() if isinstance(value, np.generic | np.ndarray) else value
        h.update(f"{key}={value!r}\n".encode())


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_json_default)


def _json_default(value: Any) -> Any:
    # numpy scalars and arrays creep into stats dicts; store them as the Python values they equal.
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} {value!r} is not JSON-serialisable")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _corrupt(name: Path, what: str) -> LibraryError:
    return LibraryError(f"{name} is a damaged skill library ({what}); restore it from a backup or delete it")


@contextlib.contextmanager
def _translated_errors(name: Path) -> Iterator[None]:
    """Turn what h5py raises on a damaged file into a one-line ``LibraryError`` naming it."""
    try:
        yield
    except LibraryError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError, TypeError, json.JSONDecodeError) as exc:
        raise _corrupt(name, f"unreadable content: {_short(exc)}") from None
