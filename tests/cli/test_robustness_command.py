"""``robo-coevolve-tree evaluate --suite robustness``: bad input is one line; a tiny run's report."""

import json

import pytest
from bench_commands import make_tiny_run
from cli_runner import run_cli

from robo_coevolve.cli.tree import main


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--families", "push,gravity"], "--families: unknown perturbation family 'gravity'"),
        (["--arms", "answer,ghost"], "--arms ['ghost']: choose from answer, oracle"),
        (["--policy", "final=somewhere"], "--policy 'final=somewhere': give NAME=DIR"),
        (["--policy", "mine=/nowhere"], "policy checkpoint /nowhere does not exist"),
        (["--tasks", "0"], "--tasks 0: give a whole number >= 1"),
        (["--oracle-trials", "-2"], "--oracle-trials -2: give a whole number >= 1"),
        ([], "has no policy checkpoint yet"),
    ],
)
def test_bad_suite_input_is_one_line(new_run, capsys, args, needle):
    assert main(["evaluate", str(new_run), "--suite", "robustness", *map(str, args)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("error: ")
    assert needle in err


@pytest.mark.slow
def test_the_suite_on_a_tiny_run_writes_its_report(tmp_path):
    run_dir = make_tiny_run(tmp_path / "run")
    out = tmp_path / "suite" / "robustness.json"
    args = ["--suite", "robustness", "--tasks", "2", "--oracle-trials", "3", "--json", out]
    proc = run_cli("tree", "evaluate", run_dir, *args, "--families", "push on blade,latency,wrong skill")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "### scoop" in proc.stdout and "| latency |" in proc.stdout
    report = json.loads(out.read_text())
    rows = report["skills"]["scoop"]
    assert list(rows) == ["none", "push on blade", "latency", "wrong skill"]
    assert set(rows["latency"]["success"]) == {"answer", "oracle", "final"}
    assert report["tasks"] == 2 and report["oracle trials"] == 3
