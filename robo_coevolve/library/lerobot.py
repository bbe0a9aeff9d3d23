"""Export a skill library as a LeRobot v3.0 dataset, written with pyarrow and imageio alone.

lerobot itself is not imported: its releases pin torch versions that conflict with ours. The
layout is v3.0's: ``meta/info.json``, ``meta/stats.json``, ``meta/tasks.parquet`` (task strings as
the pandas index, as ``lerobot`` reads them), ``meta/episodes/chunk-000/file-000.parquet``, one
data file ``data/chunk-000/file-000.parquet`` with a row per frame, and one video
``videos/observation.images.policy/chunk-000/file-000.mp4`` holding every episode's frames back
to back. A frame is the step before each action: ``observation.state`` is the proprioception,
``observation.environment_state`` the egg's state, ``action`` the normalised spatula target,
and the image is the policy camera rendered from the stored simulator state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import imageio.v2 as imageio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robo_coevolve.atomic import directory_aside
from robo_coevolve.env.rendering import StateRenderer
from robo_coevolve.library.skill_library import SkillLibrary, chosen_skills
from robo_coevolve.segment import Segment

CODEBASE_VERSION = "v3.0"
ROBOT_TYPE = "robo_coevolve_spatula"
CHUNKS_SIZE = 1000
DATA_FILES_SIZE_IN_MB = 100
VIDEO_FILES_SIZE_IN_MB = 200
IMAGE_KEY = "observation.images.policy"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-000/file-000.parquet"
CODEC = "h264"

_POSE = ["x", "y", "z", "pitch", "roll"]
NAMES = {
    "action": _POSE,
    "observation.state": _POSE + [f"vel_{n}" for n in _POSE] + [f"cmd_{n}" for n in _POSE],
    "observation.environment_state": ["x", "y", "z", "qw", "qx", "qy", "qz"]
    + ["vx", "vy", "vz", "wx", "wy", "wz"],
}
_PER_STEP = ("episode_index", "frame_index", "task_index", "next.reward", "next.done")
# feature -> parquet value type; vectors become fixed-size lists of it.
_ARROW = {"float32": pa.float32(), "int64": pa.int64(), "bool": pa.bool_()}


def export_lerobot(
    library: SkillLibrary,
    out_dir: str | Path,
    skills: list[str] | None = None,
    image_size: int = 64,
    fps: float | None = None,
    overwrite: bool = False,
) -> Path:
    """Write the segments of ``skills`` (default: all the library has) as a LeRobot v3.0 dataset
    in ``out_dir``; returns it.

    Args:
        image_size: side of the square policy-camera frames (even, for yuv420p video).
        fps: frame rate; default the segments' control rate (which must then be one rate).
        overwrite: replace an existing non-empty ``out_dir`` (else ``FileExistsError``).

    The dataset is built in a temporary directory beside ``out_dir`` and renamed into place, so
    ``out_dir`` never holds a half-written export.
    """
    out_dir = Path(out_dir)
    if isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 8 or image_size % 2:
        raise ValueError(f"image_size={image_size!r} must be an even number of pixels >= 8")
    if out_dir.exists() and not overwrite and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise FileExistsError(f"{out_dir} exists and is not empty: pick a new directory or pass overwrite")
    skills = chosen_skills(library, skills)
    if fps is None:
        rates = {m["control_hz"] for s in skills for m in library.metadata(s)}
        if len(rates) > 1:
            raise ValueError(f"segments run at {sorted(rates)} Hz: pass fps, or export one rate at a time")
        fps = rates.pop()
    if not fps > 0:
        raise ValueError(f"fps={fps} must be positive")
    # lerobot writes fps as an int; keep that form whenever the rate is whole.
    fps = int(fps) if float(fps).is_integer() else float(fps)

    with directory_aside(out_dir) as tmp:
        _write_dataset(library, skills, tmp, image_size, fps)
    return out_dir


def _write_dataset(library: SkillLibrary, skills: list[str], root: Path, size: int, fps: float) -> None:
    video = root / VIDEO_PATH.format(video_key=IMAGE_KEY, chunk_index=0, file_index=0)
    video.parent.mkdir(parents=True)
    columns: dict[str, list[np.ndarray]] = {k: [] for k in (*NAMES, *_PER_STEP)}
    episodes: list[dict[str, Any]] = []
    tasks: dict[str, int] = {}
    image_stats = _ImageStats()
    frames = 0
    renderers = StateRenderer(size)
    try:
        with imageio.get_writer(
            video,
            fps=fps,
            codec="libx264",
            quality=8,
            pixelformat="yuv420p",
            macro_block_size=2,
            # Keyframes every other frame, as lerobot encodes: training decodes frames at random.
            ffmpeg_params=["-g", "2"],
        ) as writer:
            for skill in skills:
                for index, segment in enumerate(library.segments(skill)):
                    episode = len(episodes)
                    t = len(segment)
                    task = tasks.setdefault(segment.task.instruction, len(tasks))
                    for state in segment.states[:-1]:
                        frame = renderers.render(segment.task, state)
                        image_stats.add(frame)
                        writer.append_data(frame)
                    reward = np.zeros(t, np.float32)
                    reward[-1] = float(segment.success)
                    done = np.zeros(t, bool)
                    done[-1] = True
                    columns["action"].append(segment.actions)
                    columns["observation.state"].append(segment.proprio[:-1])
                    columns["observation.environment_state"].append(segment.egg[:-1])
                    columns["episode_index"].append(np.full(t, episode, np.int64))
                    columns["frame_index"].append(np.arange(t, dtype=np.int64))
                    columns["task_index"].append(np.full(t, task, np.int64))
                    columns["next.reward"].append(reward)
                    columns["next.done"].append(done)
                    episodes.append(_episode_row(episode, segment, frames, fps, skill, index))
                    frames += t
    finally:
        renderers.close()

    data = {k: np.concatenate(v) for k, v in columns.items()}
    data["timestamp"] = (data["frame_index"] / fps).astype(np.float32)
    data["index"] = np.arange(frames, dtype=np.int64)
    features = _features(size, fps)
    path = root / DATA_PATH.format(chunk_index=0, file_index=0)
    path.parent.mkdir(parents=True)
    pq.write_table(_table({k: data[k] for k in features if k != IMAGE_KEY}, features), path)
    _write_episodes(episodes, root / EPISODES_PATH)
    _write_tasks(tasks, root / "meta" / "tasks.parquet")
    stats = {k: _stats(data[k]) for k in features if k != IMAGE_KEY}
    stats[IMAGE_KEY] = image_stats.result()
    (root / "meta" / "stats.json").write_text(json.dumps(stats, indent=4))
    info = {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": ROBOT_TYPE,
        "total_episodes": len(episodes),
        "total_frames": frames,
        "total_tasks": len(tasks),
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": DATA_FILES_SIZE_IN_MB,
        "video_files_size_in_mb": VIDEO_FILES_SIZE_IN_MB,
        "fps": fps,
        "splits": {"train": f"0:{len(episodes)}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH,
        "features": features,
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4))


def _features(size: int, fps: float) -> dict[str, dict[str, Any]]:
    def vector(key: str) -> dict[str, Any]:
        return {"dtype": "float32", "shape": [len(NAMES[key])], "names": NAMES[key]}

    def scalar(dtype: str) -> dict[str, Any]:
        return {"dtype": dtype, "shape": [1], "names": None}

    return {
        "action": vector("action"),
        "observation.state": vector("observation.state"),
        "observation.environment_state": vector("observation.environment_state"),
        IMAGE_KEY: {
            "dtype": "video",
            "shape": [size, size, 3],
            "names": ["height", "width", "channels"],
            "info": {
                "video.height": size,
                "video.width": size,
                "video.codec": CODEC,
                "video.pix_fmt": "yuv420p",
                "video.is_depth_map": False,
                "video.fps": fps,
                "video.channels": 3,
                "has_audio": False,
            },
        },
        "next.reward": scalar("float32"),
        "next.done": scalar("bool"),
        "timestamp": scalar("float32"),
        "frame_index": scalar("int64"),
        "episode_index": scalar("int64"),
        "index": scalar("int64"),
        "task_index": scalar("int64"),
    }


def _table(data: dict[str, np.ndarray], features: dict[str, dict[str, Any]]) -> pa.Table:
    arrays = {}
    for key, values in data.items():
        kind = _ARROW[features[key]["dtype"]]
        if values.ndim == 2:
            flat = pa.array(np.ascontiguousarray(values).reshape(-1), type=kind)
            arrays[key] = pa.FixedSizeListArray.from_arrays(flat, values.shape[1])
        else:
            arrays[key] = pa.array(values, type=kind)
    return pa.table(arrays)


def _episode_row(episode: int, segment: Segment, start: int, fps: float, skill: str, index: int) -> dict:
    t = len(segment)
    video = f"videos/{IMAGE_KEY}"
    return {
        "episode_index": episode,
        "tasks": [segment.task.instruction],
        "length": t,
        "data/chunk_index": 0,
        "data/file_index": 0,
        "dataset_from_index": start,
        "dataset_to_index": start + t,
        f"{video}/chunk_index": 0,
        f"{video}/file_index": 0,
        f"{video}/from_timestamp": start / fps,
        f"{video}/to_timestamp": (start + t) / fps,
        "meta/episodes/chunk_index": 0,
        "meta/episodes/file_index": 0,
        # Provenance: the library demo this episode is.
        "skill": skill,
        "library_index": index,
    }


def _write_episodes(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True)
    types = {"tasks": pa.list_(pa.string()), "skill": pa.string()}
    columns = {
        key: pa.array(
            [row[key] for row in rows],
            type=types.get(key, pa.float64() if key.endswith("timestamp") else pa.int64()),
        )
        for key in rows[0]
    }
    pq.write_table(pa.table(columns), path)


def _write_tasks(tasks: dict[str, int], path: Path) -> None:
    """Columns ``task_index`` and ``task``, with pandas metadata making ``task`` the index:
    lerobot reads the file with ``pd.read_parquet`` and looks tasks up by that index."""
    table = pa.table(
        {"task_index": pa.array(list(tasks.values()), pa.int64()), "task": pa.array(list(tasks), pa.string())}
    )
    pandas = {
        "index_columns": ["task"],
        "column_indexes": [
            {
                "name": None,
                "field_name": None,
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": {"encoding": "UTF-8"},
            }
        ],
        "columns": [
            {
                "name": "task_index",
                "field_name": "task_index",
                "pandas_type": "int64",
                "numpy_type": "int64",
                "metadata": None,
            },
            {
                "name": "task",
                "field_name": "task",
                "pandas_type": "unicode",
                "numpy_type": "object",
                "metadata": None,
            },
        ],
        "attributes": {},
        "creator": {"library": "pyarrow", "version": pa.__version__},
    }
    pq.write_table(table.replace_schema_metadata({"pandas": json.dumps(pandas)}), path)


def _stats(values: np.ndarray) -> dict[str, list]:
    x = values.astype(np.float64).reshape(len(values), -1)
    return {
        "min": x.min(axis=0).tolist(),
        "max": x.max(axis=0).tolist(),
        "mean": x.mean(axis=0).tolist(),
        "std": x.std(axis=0).tolist(),
        "count": [len(x)],
    }


class _ImageStats:
    """Per-channel min, max, mean and std of frames scaled to [0, 1], shaped (3, 1, 1) as
    lerobot keeps image stats."""

    def __init__(self):
        self.frames = 0
        self.pixels = 0
        self.sum = np.zeros(3)
        self.sumsq = np.zeros(3)
        self.min = np.full(3, 255.0)
        self.max = np.zeros(3)

    def add(self, frame: np.ndarray) -> None:
        pixels = frame.reshape(-1, 3).astype(np.float64)
        self.frames += 1
        self.pixels += len(pixels)
        self.sum += pixels.sum(axis=0)
        self.sumsq += (pixels**2).sum(axis=0)
        self.min = np.minimum(self.min, pixels.min(axis=0))
        self.max = np.maximum(self.max, pixels.max(axis=0))

    def result(self) -> dict[str, list]:
        mean = self.sum / self.pixels
        std = np.sqrt(np.maximum(self.sumsq / self.pixels - mean**2, 0.0))

        def shaped(v: np.ndarray) -> list:
            return (np.asarray(v, np.float64) / 255.0).reshape(3, 1, 1).tolist()

        return {
            "min": shaped(self.min),
            "max": shaped(self.max),
            "mean": shaped(mean),
            "std": shaped(std),
            "count": [self.frames],
        }
