"""A command starts fast: the CLI imports a command's module (and its libraries) only when that command runs or
shows its own help; `swarmkit --help` reads the registry alone."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

from swarmkit.cli.app import COMMANDS, load

HEAVY = ("python_on_whales", "pydantic", "confluent_kafka", "kafka", "cryptography", "pyspark", "docker")
# What a command loads when it runs, not when the CLI starts: the work itself, the Kafka and Docker adapters.
WORK = (
    "swarmkit.ops.",
    "swarmkit.checks.",
    "swarmkit.traffic.",
    "swarmkit.sandbox.",
    "swarmkit.network.",
    "swarmkit.kafka.",
    "swarmkit.hosts.dockerapi",
)
# CPU seconds (not wall: a busy machine stretches wall time far more than the work) for importing the
# CLI, which is the command registry: 0.10-0.14 s on this kind of machine at CPU pressure 13-30 % (0.19-0.21 s when
# every command module was imported with lazy() stand-ins for their libraries; 0.3-0.45 s before those).
IMPORT_CPU_BUDGET = 0.5
COMMAND_MODULES = tuple(f"swarmkit.cli.{entry.module}" for entry in COMMANDS.values())
WIDE = {**os.environ, "COLUMNS": "300"}
# the program, then (at exit: typer ends with SystemExit) the command modules it imported, as one JSON line
PROGRAM = f"""
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(set({COMMAND_MODULES!r}) & set(sys.modules)))))
from swarmkit.cli import main
sys.argv = ["swarmkit", *sys.argv[1:]]
main()
"""

MEASURE = f"""
import json, sys, time
started = time.process_time()
import swarmkit.cli.app
print(json.dumps({{
    "cpu": time.process_time() - started,
    "heavy": [m for m in {HEAVY!r} if m in sys.modules],
    "work": sorted(m for m in sys.modules if m.startswith({WORK!r})),
}}))
"""


def test_the_cli_imports_no_heavy_library_and_stays_within_its_cpu_budget() -> None:
    done = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True)
    measured = json.loads(done.stdout)
    assert measured["heavy"] == []
    assert measured["work"] == []
    assert measured["cpu"] < IMPORT_CPU_BUDGET, measured


# `verify` reads Docker through the Engine API (the docker SDK): no python-on-whales client, so no docker CLI process.
VERIFY = """
import json, sys
import python_on_whales
built = []
python_on_whales.DockerClient.__init__ = lambda *args, **kwargs: built.append(args)
from swarmkit.checks import verify
from swarmkit.errors import SwarmkitError
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
hosts = tuple(Host(f"h{i}", f"unix:///nonexistent/h{i}.sock", f"10.0.0.{i}", "manager") for i in (1, 2, 3))
try:
    verify.verify(Session.of(Inventory(hosts=hosts)), verify.VerifyOptions(budget=5))
except SwarmkitError as error:
    print(json.dumps({"error": error.message, "cli_clients": len(built)}))
"""


def test_verify_reads_docker_through_the_engine_api_only() -> None:
    done = subprocess.run([sys.executable, "-c", VERIFY], capture_output=True, text=True, check=True)
    measured = json.loads(done.stdout)
    assert measured["error"].startswith("no manager of the inventory answers as an active swarm manager: the Docker engine at")
    assert "No such file or directory" in measured["error"] and measured["error"].endswith("(nor h2, h3)")
    assert measured["cli_clients"] == 0


def test_verifys_module_imports_neither_the_docker_cli_library_nor_kafka_python() -> None:
    """python-on-whales (with the pydantic models it builds) and kafka-python were 0.67 s of the 1.6 s that importing
    `verify`'s module took on this machine kind: the first is not used by `verify`, the second only by its quorum read."""
    heavy = "{'python_on_whales', 'pydantic', 'kafka'}"
    code = f"import sys; import swarmkit.cli.checks; print(sorted({heavy} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_heavy_library_is_imported_when_first_used() -> None:
    code = "import sys; from swarmkit.security import certs; certs.new_ca('t'); print('cryptography' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_the_registry_lists_each_command_by_the_first_paragraph_of_its_own_help() -> None:
    for name, entry in COMMANDS.items():
        help_text = inspect.cleandoc((load(name).help or "").split("\f")[0]).split("\n\n")[0]
        assert entry.summary == " ".join(help_text.split()), name


def test_top_level_help_lists_every_command_without_importing_one() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, "--help"], capture_output=True, text=True, env=WIDE)
    assert done.returncode == 0, done.stderr
    listed, loaded = done.stdout.rstrip("\n").rsplit("\n", 1)
    assert all(f" {name} " in listed for name in COMMANDS)
    assert json.loads(loaded) == []


def test_a_command_imports_its_own_module_only() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, "verify", "--help"], capture_output=True, text=True, env=WIDE)
    assert done.returncode == 0, done.stderr
    assert "Usage: swarmkit verify" in done.stdout
    assert json.loads(done.stdout.rstrip("\n").rsplit("\n", 1)[1]) == ["swarmkit.cli.checks"]
