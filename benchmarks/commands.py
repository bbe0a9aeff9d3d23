"""One command with subcommands: each subcommand a module with ``add_arguments(parser)`` and
``run(args)``, its docstring the subcommand's help."""

from __future__ import annotations

import argparse
from types import ModuleType


def main(prog: str, description: str, subcommands: dict[str, ModuleType], argv: list[str] | None = None):
    """Parse ``argv`` and run the subcommand it names."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    chosen = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in subcommands.items():
        sub = chosen.add_parser(
            name,
            help=" ".join(module.__doc__.split("\n\n")[0].split()),
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    args = parser.parse_args(argv)
    vars(args).pop("run")(args)
