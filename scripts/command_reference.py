"""Write docs/commands.md from the typer app, so the reference changes with the code and not apart from it.

    python scripts/command_reference.py           # rewrite docs/commands.md
    python scripts/command_reference.py --check   # exit 1 when docs/commands.md is not current

The text is built from click's parameters, never from typer's rich help screen: no terminal width, no markup.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Defaults the CLI reads from the environment when it is imported: shown as the variable, so the page does not
# depend on the shell that wrote it.
ENVIRONMENT_DEFAULTS = {"DOCKER_HOST": "unix:///var/run/docker.sock"}
REFERENCE = ROOT / "docs" / "commands.md"
HEADER = """# Command reference

Generated from the typer app by `python scripts/command_reference.py`; do not edit by hand.
`python scripts/command_reference.py --check` (and `tests/unit/test_docs.py`) fails when this page is not current.
Every command also takes `--help`. Exit codes and `--json`: [day-2 operations](day-2.md#json-and-exit-codes).
"""


def render_reference() -> str:
    """The whole reference as markdown, for the CLI of the checkout this script lives in."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import typer

    from swarmkit.cli.app import app, command

    root = typer.main.get_command(app)
    context = root.context_class(root, info_name="swarmkit")
    commands = list(_walk(root, context, ["swarmkit"], command))
    index = [f"- [`{' '.join(path)}`](#{_anchor(path)}): {_summary(command)}" for path, command, _ in commands[1:]]
    sections = [_section(path, command, ctx) for path, command, ctx in commands]
    return "\n".join([HEADER, *index, "", *sections]).rstrip("\n") + "\n"


def _walk(
    command: Any, context: Any, path: list[str], loaded: Callable[[Any, Any, str], Any]
) -> Iterator[tuple[list[str], Any, Any]]:
    """Every command, depth first, in the order `--help` lists them, each as it runs (``loaded``); hidden ones left out."""
    yield path, command, context
    if not hasattr(command, "list_commands"):
        return
    for name in command.list_commands(context):
        sub = loaded(command, context, name)
        if sub is not None and not sub.hidden:
            yield from _walk(sub, sub.context_class(sub, info_name=name, parent=context), [*path, name], loaded)


def _section(path: list[str], command: Any, context: Any) -> str:
    level = "#" * max(2, len(path))
    lines = [f"{level} `{' '.join(path)}`", "", _help(command), "", "```", _usage(path, command), "```", ""]
    rows = [_row(param, context) for param in command.params if not getattr(param, "hidden", False)]
    if rows:
        lines += ["| option or argument | what it is | default |", "| --- | --- | --- |", *rows, ""]
    return "\n".join(lines)


def _help(command: Any) -> str:
    """The command's help as written (click's `\\f` ends what is shown)."""
    return inspect.cleandoc((command.help or "").split("\f")[0]) or "(no help text)"


def _summary(command: Any) -> str:
    return _help(command).split("\n\n")[0].replace("\n", " ")


def _usage(path: list[str], command: Any) -> str:
    pieces = [*path, "[OPTIONS]"] if any(p.param_type_name == "option" for p in command.params) else list(path)
    for param in command.params:
        if param.param_type_name == "argument":
            name = (param.name or "").upper() + ("..." if param.nargs == -1 else "")
            pieces.append(name if param.required else f"[{name}]")
    if hasattr(command, "list_commands"):
        pieces.append("COMMAND [ARGS]...")
    return " ".join(pieces)


def _row(param: Any, context: Any) -> str:
    record = param.get_help_record(context)
    names = record[0] if record else param.name
    if param.param_type_name == "argument":
        names = names.replace(param.name, param.name.upper(), 1)
    cells = [f"`{names}`", _cell(inspect.cleandoc(param.help or "")), _cell(_default(param))]
    return "| " + " | ".join(cells) + " |"


def _default(param: Any) -> str:
    """What is used when the option is left out, as `--help` would say it."""
    if param.required:
        return "required"
    show = getattr(param, "show_default", True)
    if isinstance(show, str):
        return show
    value = param.default
    if show is False or callable(value) or value in (None, "", [], ()) or (getattr(param, "is_flag", False) and not value):
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    for variable, fallback in ENVIRONMENT_DEFAULTS.items():
        if value in (fallback, os.environ.get(variable)):
            return f"${variable}, else {fallback}"
    return str(getattr(value, "value", value))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _anchor(path: list[str]) -> str:
    return "-".join(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write or check docs/commands.md, the command reference.")
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/commands.md is not current")
    args = parser.parse_args(argv)
    text = render_reference()
    if not args.check:
        REFERENCE.parent.mkdir(exist_ok=True)
        REFERENCE.write_text(text, encoding="utf-8")
        print(f"wrote {REFERENCE.relative_to(ROOT)}")
        return 0
    current = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else None
    if current == text:
        print(f"{REFERENCE.relative_to(ROOT)} is current")
        return 0
    state = "is missing" if current is None else "is not current (the typer app changed)"
    print(f"{REFERENCE.relative_to(ROOT)} {state}: run `python scripts/command_reference.py`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
