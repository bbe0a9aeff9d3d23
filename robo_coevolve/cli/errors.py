"""User errors of the console commands: one line on stderr naming the problem and the fix, exit 2.

``command`` wraps a command's ``main`` so the project's user-error exceptions (a bad task spec,
a damaged skill library, a bad checkpoint or config, ``UsageError``) never reach the user as a
traceback; ``ArgumentParser`` makes argparse's own errors one line too.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence

Main = Callable[[Sequence[str] | None], int]


class UsageError(Exception):
    """A command's input is wrong; the message names the problem and how to fix it."""


def user_errors() -> tuple[type[Exception], ...]:
    """The project's exception types whose message is addressed to the user, besides
    ``UsageError`` (imported only when needed: some live in modules that take seconds to import)."""
    from hydra.errors import HydraException

    from robo_coevolve.coevolve.task_pool import TaskPoolError
    from robo_coevolve.evolve.run_state import ResumeError
    from robo_coevolve.library import LibraryError
    from robo_coevolve.policy import PolicyConfigError
    from robo_coevolve.skill_tree import SkillTreeError
    from robo_coevolve.task_spec import TaskSpecError
    from robo_coevolve.workspace.evolve import ConfigError

    return (
        TaskSpecError,
        LibraryError,
        PolicyConfigError,
        SkillTreeError,
        TaskPoolError,
        ConfigError,
        ResumeError,
        HydraException,
    )


def user_message(error: BaseException) -> str | None:
    """``error``'s message on one line if it, or an exception it was raised from (Hydra wraps what
    a component raises while it is built), is addressed to the user; else None."""
    known = (UsageError, *user_errors())
    while error is not None:
        if isinstance(error, known) and not _wraps_another(error):
            return " ".join(str(error).split())  # some messages (Hydra's) span lines
        error = error.__cause__
    return None


def _wraps_another(error: BaseException) -> bool:
    """Hydra's wrapper of an error raised inside a component's constructor, whose own message
    is the wrapped one's with a traceback-like preamble."""
    from hydra.errors import InstantiationException

    return isinstance(error, InstantiationException) and error.__cause__ is not None


def command(main: Main) -> Main:
    """``main`` with every user error reported as ``error: <message>`` (one line) and exit code 2."""

    @functools.wraps(main)
    def wrapped(argv: Sequence[str] | None = None) -> int:
        try:
            return main(argv)
        except Exception as e:
            message = user_message(e)
            if message is None:
                raise
            print(f"error: {message}", file=sys.stderr)
            return 2

    return wrapped


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the module docstring's examples kept as written and a one-line usage error."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
