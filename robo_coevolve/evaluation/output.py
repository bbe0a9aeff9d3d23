"""Markdown tables and JSON files, as every benchmark command prints and writes them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def table(columns: Sequence[str], rows: Sequence[Sequence], left: int = 1) -> str:
    """A markdown table; its first ``left`` columns align left (names), the rest right (figures)."""
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "".join("---|" if i < left else "--:|" for i in range(len(columns))),
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def write_json(path: str | Path | None, report) -> None:
    """Write ``report`` to ``path`` as indented JSON (nothing for None), creating its folder."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str))
