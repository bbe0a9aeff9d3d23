"""The documentation stays navigable: a short README, and no relative link that leads nowhere."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]
PAGES += sorted((ROOT / "docs").rglob("*.md"))
# [text](target) and ![alt](target), outside code; the target up to a space, ")" or "#".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s#]*)(?:#[^)\s]*)?(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def relative_links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code
    return [t for t in LINK.findall(text) if t and not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; move detail into docs/ (limit 250)"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    dead = [t for t in relative_links(page) if not (page.parent / t).exists()]
    assert not dead, f"{page.relative_to(ROOT)} links to missing files: {dead}"


def test_the_design_is_cited_where_it_exists():
    missing = "DESIGN" + ".md"  # spelt apart so that this file does not cite it
    files = [p for p in ROOT.glob("*.md")]
    for folder in ("robo_coevolve", "scripts", "envs", "conf", "docs", "benchmarks", "tests"):
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".xml", ".yaml"}]
    stale = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if missing in line
    ]
    assert not stale, f"{missing} does not exist; cite docs/design.md instead: {stale}"


def test_the_link_finder_sees_links_and_skips_code(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        'See [a](a.md), ![b](img/b.gif "title"), [c](c.md#part), [web](https://x.org), [top](#top).\n'
        "`[not](inline.md)`\n```\n[not](fenced.md)\n```\n"
    )
    assert relative_links(page) == ["a.md", "img/b.gif", "c.md"]
