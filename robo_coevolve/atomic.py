"""Atomic, durable writes: a file or directory is written aside, flushed and renamed into place, so
a crash at any moment leaves the old version or the new one, each whole, never a mixture.

Everything written aside is named ``.<stem>.<random><suffix>.tmp`` beside its destination (a
directory's old version, while it is swapped out, ``.<name>.<random>.old``): hidden, and easy for
a reader that resumes after a crash to recognise as leftovers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Files and directories written aside get these modes (mkstemp's 0600 and mkdtemp's 0700 would
# keep them from other users once in place).
FILE_MODE = 0o644
DIR_MODE = 0o755


def fsync_path(path: str | os.PathLike) -> None:
    """Flush ``path`` (a file, or a directory after a rename in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_durably(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Put the finished file ``tmp`` in place of ``path`` so that a crash leaves one or the other
    whole: flush it, rename it over ``path`` (atomic within a directory), flush the directory."""
    fsync_path(tmp)
    os.replace(tmp, path)
    fsync_path(Path(path).parent)


@contextlib.contextmanager
def file_aside(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary file beside ``path`` to write the new version in; on a clean exit it replaces
    ``path`` durably (``replace_durably``) with the mode ``path`` had, on an exception it is removed
    and ``path`` is untouched."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f"{path.suffix}.tmp")
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.exists() else FILE_MODE)
        replace_durably(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically and durably (its directory must exist); returns it."""
    path = Path(path)
    with file_aside(path) as tmp:
        tmp.write_text(text)
    return path


@contextlib.contextmanager
def directory_aside(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary directory beside ``path`` to write the new version in; on a clean exit its
    files are flushed and it takes the place of ``path`` (whatever was there is moved aside
    first and deleted only once the new one is in place), on an exception it is deleted."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        yield tmp
        tmp.chmod(DIR_MODE)
        _fsync_tree(tmp)
        _swap_in(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fsync_tree(root: Path) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            fsync_path(Path(folder) / name)
        fsync_path(folder)


def _swap_in(tmp: Path, path: Path) -> None:
    """Rename the directory ``tmp`` to ``path``; an old ``path`` is renamed aside first (a rename
    cannot replace a non-empty directory) and deleted once the new one is in place."""
    old = None
    if path.exists() or path.is_symlink():
        old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".old"))
        os.replace(path, old / "previous")
    os.replace(tmp, path)
    fsync_path(path.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
