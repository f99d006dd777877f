"""Imports inside swarmkit flow one way: a package imports only packages on a lower layer (or itself).

Layers, highest first: cli → ops (what changes a cluster) → checks (what reads it) → traffic (the Spark
runners) → {kafka, swarm, sandbox} → {stack, network, images} → security → hosts → the root modules
(errors, waits, fanout, names, assets…).  Packages on the same layer do not import each other.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from pathlib import Path

import swarmkit

PACKAGE_DIR = Path(swarmkit.__file__).parent
LAYERS = (
    ("cli",),
    ("ops",),
    ("checks",),
    ("traffic",),
    ("kafka", "swarm", "sandbox"),
    ("stack", "network", "images"),
    ("security",),
    ("hosts",),
    ("",),
)
RANK = {name: depth for depth, names in enumerate(LAYERS) for name in names}
# Below ops and checks, a deployed stack is known by its names and labels (stack.deployed), never by how
# it is rendered: the writer's modules may change without the swarm, Kafka or image code noticing.
RENDERING = (
    "swarmkit.stack.compose",
    "swarmkit.stack.render",
    "swarmkit.stack.engines",
    "swarmkit.stack.kafka_settings",
    "swarmkit.stack.metrics",
    "swarmkit.stack.prometheus",
)
NOT_RENDERING = ("kafka", "swarm", "network", "images", "traffic", "security", "hosts", "")


def _package_of(module: str) -> str:
    """The top-level subpackage a dotted swarmkit module belongs to ('' for the root modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else ""


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every swarmkit module imported by the file, with its line (``from swarmkit import x`` counts as x)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("swarmkit")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("swarmkit"):
            if node.module == "swarmkit":
                found += [(node.lineno, f"swarmkit.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return found


def _violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        module = "swarmkit." + ".".join(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
        own = _package_of(module)
        for line, imported in _imports(path):
            target = _package_of(imported)
            upward = target != own and RANK[target] <= RANK[own]
            if upward or (own in NOT_RENDERING and imported.startswith(RENDERING)):
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: {own or 'root'} imports {imported}")
    return found


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in PACKAGE_DIR.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(RANK) - {""}


def test_imports_flow_down_the_layers() -> None:
    assert _violations() == []


def test_the_swarm_does_not_know_how_a_stack_is_rendered(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "swarmkit"
    (fake / "swarm").mkdir(parents=True)
    (fake / "swarm" / "ids.py").write_text("from swarmkit.stack.engines.apache import MAX_BROKER_ID\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIR", fake)
    assert _violations() == ["swarmkit/swarm/ids.py:1: swarm imports swarmkit.stack.engines.apache"]


def test_an_upward_import_is_caught(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "swarmkit"
    (fake / "hosts").mkdir(parents=True)
    (fake / "hosts" / "bad.py").write_text("from swarmkit.ops import deploy\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIR", fake)
    assert _violations() == ["swarmkit/hosts/bad.py:1: hosts imports swarmkit.ops"]


@functools.cache
def _nodes(package: Path) -> dict[str, list[ast.AST]]:
    """Every node of every file in ``package``, by the file's path from the package's parent (parsed once)."""
    paths = package.rglob("*.py")
    return {str(p.relative_to(package.parent)): list(ast.walk(ast.parse(p.read_text(), str(p)))) for p in paths}


def _modules_with(found: Callable[[ast.AST], bool]) -> set[str]:
    """The swarmkit files with a node ``found`` holds for."""
    return {path for path, nodes in _nodes(PACKAGE_DIR).items() if any(map(found, nodes))}


def _imports_any(node: ast.AST, names: tuple[str, ...]) -> bool:
    imported = [a.name for a in node.names] if isinstance(node, ast.Import) else []
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        imported = [node.module or ""]
    return any(i.split(".")[0] in names for i in imported)


def _named(node: ast.AST) -> set[str]:
    """The name a node uses or defines (a name, an attribute, an imported name), if any."""
    return {
        n for n in (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "name", None)) if isinstance(n, str)
    }


def _calls(node: ast.AST, of: str, attribute: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attribute and getattr(node.value, "id", "") == of


def _imports_sleep(node: ast.AST) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "time" and any(a.name == "sleep" for a in node.names)


THREAD_STARTERS = {"ThreadingMixIn", "ThreadingTCPServer", "ThreadingUDPServer", "ThreadingHTTPServer"}
# Threads the standard library starts itself, where they are allowed: the metrics server answers each scrape
# in a thread of its own (its serving thread is started by fanout.serve and lives as long as the command).
LIBRARY_THREADS = {("swarmkit/checks/verdict_metrics.py", "ThreadingHTTPServer")}


def test_threads_are_started_only_by_the_fan_out_module() -> None:
    """Locks and events too are taken from fanout (fanout.Lock, fanout.Event): they are not threads, but a module
    that imports `threading` for a lock could start a thread unseen, so the import itself is the rule."""
    assert _modules_with(lambda node: _imports_any(node, ("threading", "concurrent", "_thread", "multiprocessing"))) == {
        "swarmkit/fanout.py"
    }
    nodes = _nodes(PACKAGE_DIR).items()
    assert {(path, name) for path, found in nodes for node in found for name in _named(node) & THREAD_STARTERS} == LIBRARY_THREADS


def test_every_pause_goes_through_waits() -> None:
    """waits pauses through fanout.pause, which a closing pool cuts short: no time.sleep anywhere."""
    assert _modules_with(lambda node: _calls(node, "time", "sleep") or _imports_sleep(node)) == set()
    assert _modules_with(lambda node: _calls(node, "fanout", "pause")) == {"swarmkit/waits.py"}


WAIT_PARTS = {"Pause", "StallClock"}  # what waits.until is made of


def _polls_by_hand(node: ast.AST) -> bool:
    """A poll loop's parts used by hand: a pause or a stall clock made, or something slept."""
    return isinstance(node, ast.Call) and bool(_named(node.func) & WAIT_PARTS or getattr(node.func, "attr", "") == "sleep")


def test_every_poll_goes_through_waits_until() -> None:
    """A wait is one call (waits.until: the growing pause, the bound, the progress), not a loop written again."""
    assert _modules_with(_polls_by_hand) == {"swarmkit/waits.py"}


def test_a_hand_written_poll_loop_is_caught(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "swarmkit"
    fake.mkdir()
    (fake / "loop.py").write_text("from swarmkit import waits\n\npause = waits.Pause()\nwhile look():\n    pause.sleep()\n")
    (fake / "made.py").write_text("from swarmkit.waits import StallClock\n\nclock = StallClock(limits)\n")
    (fake / "slept.py").write_text("def wait(pause):\n    pause.sleep()\n")
    (fake / "until.py").write_text("from swarmkit import waits\n\nwaits.until(look, 10, first=0.2)\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIR", fake)
    assert _modules_with(_polls_by_hand) == {"swarmkit/loop.py", "swarmkit/made.py", "swarmkit/slept.py"}


def test_a_thread_or_a_sleep_elsewhere_is_caught(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "swarmkit"
    fake.mkdir()
    (fake / "poll.py").write_text("import time\nfrom threading import Thread\n\ntime.sleep(1)\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIR", fake)
    assert _modules_with(lambda node: _imports_any(node, ("threading",))) == {"swarmkit/poll.py"}
    assert _modules_with(lambda node: _calls(node, "time", "sleep")) == {"swarmkit/poll.py"}


REGISTRY = "swarmkit/cli/app.py"


def _loads_a_module_later(node: ast.AST) -> bool:
    """A module imported at run time by name (importlib.import_module, __import__), a ``lazy(...)`` proxy, or an
    import of the old ``swarmkit.lazy``."""
    if isinstance(node, ast.Call):
        called = node.func
        return _calls(called, "importlib", "import_module") or _named(called) & {"lazy", "import_module", "__import__"} != set()
    if isinstance(node, ast.ImportFrom):
        return node.module == "swarmkit.lazy"
    return isinstance(node, ast.alias) and node.name in ("lazy", "swarmkit.lazy")


def _mirrors_imports(node: ast.AST) -> bool:
    """``if TYPE_CHECKING: <imports> else: <something bound at run time>``: a module that only looks imported."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in _named(node.test) and bool(node.orelse)


def test_modules_are_imported_lazily_only_by_the_command_registry() -> None:
    """A command's module is imported when the command runs (the registry); every other module imports what it
    uses at its top, so a call site shows what runs (but for the two client libraries of ``LATE_IMPORTS``)."""
    assert _modules_with(_loads_a_module_later) == {REGISTRY}
    assert _modules_with(_mirrors_imports) == set()


# Where an import may sit inside a function: the program's entry imports the registry when it runs; the Docker
# adapter imports python-on-whales when a command first makes a Docker CLI client (a command that only reads
# through the Engine API never pays its half second of imports); the quorum reader imports kafka-python when it
# first asks.
LATE_IMPORTS = {"swarmkit/cli/__init__.py", "swarmkit/hosts/dockerapi/calls.py", "swarmkit/kafka/quorum.py"}


def _imports_in_a_function(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef) and any(isinstance(n, ast.Import | ast.ImportFrom) for n in ast.walk(node))


def test_an_import_inside_a_function_is_only_where_a_client_library_or_the_registry_is_loaded() -> None:
    assert _modules_with(_imports_in_a_function) == LATE_IMPORTS


def test_a_lazy_import_elsewhere_is_caught(tmp_path, monkeypatch) -> None:
    fake = tmp_path / "swarmkit"
    fake.mkdir()
    (fake / "adapter.py").write_text(
        "from typing import TYPE_CHECKING\nfrom swarmkit.lazy import lazy\n\n"
        "if TYPE_CHECKING:\n    import docker\nelse:\n    docker = lazy('docker')\n"
    )
    (fake / "later.py").write_text("import importlib\n\nwhales = importlib.import_module('python_on_whales')\n")
    (fake / "proxy.py").write_text("from swarmkit import lazy\n")
    (fake / "inner.py").write_text("def client():\n    import docker\n\n    return docker.APIClient()\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE_DIR", fake)
    assert _modules_with(_imports_in_a_function) == {"swarmkit/inner.py"}
    assert _modules_with(_loads_a_module_later) == {"swarmkit/adapter.py", "swarmkit/later.py", "swarmkit/proxy.py"}
    assert _modules_with(_mirrors_imports) == {"swarmkit/adapter.py"}
