"""Every command runs as ``python -m robo_coevolve.cli.<verb>`` and explains itself with examples;
a malformed command line is one line."""

import pytest
from cli_runner import refused, run_cli


@pytest.mark.parametrize("verb", ["tree", "export", "render", "distill", "plot"])
def test_help_names_the_command_and_shows_examples(verb):
    proc = run_cli(verb, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: robo-coevolve-{verb}")
    examples = [line for line in proc.stdout.split("examples:\n", 1)[1].splitlines() if line.strip()]
    assert examples[0].lstrip().startswith((f"robo-coevolve-{verb} ", "#")), examples


def test_a_malformed_command_line_is_one_line_pointing_at_help():
    line = refused(run_cli("render", "trial"))
    assert "the following arguments are required: trial" in line
    assert line.endswith("(see robo-coevolve-render trial --help)")
