"""No function in swarmkit is longer than one screen: the limit held by habit, now by a test."""

from __future__ import annotations

import ast
from pathlib import Path

import swarmkit

PACKAGE_DIR = Path(swarmkit.__file__).parent
MAX_LINES = 60


def _long_functions(root: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno}: {node.name} has {length} lines")
    return found


def test_no_function_exceeds_one_screen() -> None:
    assert _long_functions(PACKAGE_DIR, MAX_LINES) == []


def test_a_long_function_is_caught(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (package / "long.py").write_text(f"def long():\n{body}\n")
    assert _long_functions(package, MAX_LINES) == [f"pkg/long.py:1: long has {MAX_LINES + 1} lines"]
