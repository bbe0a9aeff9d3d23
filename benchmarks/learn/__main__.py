"""Policies cloned from explorer-made skill libraries, one subcommand per question."""

from benchmarks.commands import main
from benchmarks.learn import answer_clone, clone

main("python -m benchmarks.learn", __doc__, {"clone": clone, "answer-clone": answer_clone})
