"""The documentation stays true to the code and to itself: the command reference is generated from the CLI and
current, the README stays short, and every relative link (and the heading it names) exists."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
INDEX = ROOT / "docs" / "index.md"
PAGES = sorted([README, *(ROOT / "docs").glob("*.md"), ROOT / "benchmarks" / "RESULTS.md"])
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def _reference_module():
    spec = importlib.util.spec_from_file_location("command_reference", ROOT / "scripts" / "command_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _links(page: Path) -> list[str]:
    """The link targets of a page, leaving out what is in code (a `[x](y)` there is an example, not a link)."""
    text = INLINE_CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped, spaces made '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def _relative(target: str) -> bool:
    return not re.match(r"[a-z][a-z0-9+.-]*:", target)


def test_command_reference_is_current() -> None:
    module = _reference_module()
    written = module.REFERENCE.read_text(encoding="utf-8")
    assert written == module.render_reference(), "docs/commands.md is not current: run python scripts/command_reference.py"


def test_command_reference_names_every_command() -> None:
    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    for command in ("swarmkit up", "swarmkit verify", "swarmkit sandbox up", "swarmkit users remove", "swarmkit image push"):
        assert f"`{command}`" in text


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move the detail into docs/"


def test_readme_keeps_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "bash scripts/demo.sh" in text and "bash scripts/test.sh" in text


def test_every_docs_page_is_linked_from_the_readme_or_the_index() -> None:
    linked = {(page.parent / target.split("#")[0]).resolve() for page in (README, INDEX) for target in _links(page)}
    orphans = [page.name for page in (ROOT / "docs").glob("*.md") if page.resolve() not in linked and page != INDEX]
    assert not orphans, f"docs pages no one links to: {orphans}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_point_to_files_and_headings_that_exist(page: Path) -> None:
    broken = []
    for target in filter(_relative, _links(page)):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in _anchors(file):
            broken.append(f"{target}: no such heading in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
