"""Atomic writes leave the old version or the new one, whole, and nothing beside them."""

import os
import signal
import subprocess
import sys
import time

import pytest

from robo_coevolve.atomic import directory_aside, file_aside, write_text_atomic

# Rewrites one file with ever newer versions, each a single character repeated.
WRITER = """
import sys
from robo_coevolve.atomic import write_text_atomic
k = 0
while True:
    write_text_atomic(sys.argv[1], "abcdefgh"[k % 8] * 2_000_000)
    k += 1
    if k == 3:
        print("writing", flush=True)
"""


def test_write_text_atomic_replaces_the_file_and_keeps_its_mode(tmp_path):
    path = write_text_atomic(tmp_path / "state.json", "one")
    assert path.read_text() == "one" and path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)
    write_text_atomic(path, "two")
    assert path.read_text() == "two" and path.stat().st_mode & 0o777 == 0o600
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_text_atomic(tmp_path / "pool.json", "old")
    with pytest.raises(RuntimeError, match="half-way"), file_aside(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError("half-way")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["pool.json"]


def test_directory_aside_replaces_a_full_directory_or_leaves_it(tmp_path):
    final = tmp_path / "iter_0001"
    with directory_aside(final) as tmp:
        (tmp / "model.bin").write_bytes(b"first")
        assert not final.exists()
    assert final.stat().st_mode & 0o777 == 0o755
    with directory_aside(final) as tmp:
        (tmp / "sub").mkdir()
        (tmp / "sub" / "model.bin").write_bytes(b"second")
    assert sorted(p.relative_to(final).as_posix() for p in final.rglob("*")) == ["sub", "sub/model.bin"]
    with pytest.raises(KeyboardInterrupt), directory_aside(final) as tmp:
        (tmp / "partial").write_bytes(b"x")
        raise KeyboardInterrupt
    assert (final / "sub" / "model.bin").read_bytes() == b"second"
    assert os.listdir(tmp_path) == ["iter_0001"]


def test_sigkill_mid_write_leaves_one_whole_version(tmp_path):
    path = tmp_path / "big.txt"
    for delay in (0.0, 0.013, 0.029, 0.051):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline() == "writing\n"
            time.sleep(delay)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
        text = path.read_text()
        assert len(text) == 2_000_000 and len(set(text)) == 1, (delay, len(text), set(text))
