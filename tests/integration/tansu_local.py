"""Real tansu brokers as plain processes on loopback, for tests of the Kafka adapter, diagnose and Spark.

Each broker is its own single-broker cluster (memory engine). Brokers are started on free ports,
waited on until they answer Kafka metadata, and stopped by pid at the end, also on failure.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmkit.assets import tansu_binary
from swarmkit.errors import BrokerError
from swarmkit.kafka import admin

START_TIMEOUT = 20.0


@dataclass(frozen=True)
class LocalBroker:
    listen: str
    advertised: str
    pid: int


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_answers(bootstrap: str, timeout: float = START_TIMEOUT) -> None:
    """Wait until the broker at ``bootstrap`` gives metadata (it may advertise something unusable)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin.broker_metadata(bootstrap, timeout=1.0)
            return
        except BrokerError:
            if time.monotonic() > deadline:
                raise


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM all at once (tansu exits at once), then SIGKILL any that linger (as one that lost a busy client can)."""
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + 2  # memory engine: nothing to flush
    for process in processes:
        try:
            process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@contextlib.contextmanager
def tansu_brokers(advertised_hosts: list[str | None], log_dir: Path) -> Iterator[list[LocalBroker]]:
    """One tansu per entry, listening on 127.0.0.1:<free port> and advertising ``host:<port>``
    (127.0.0.1 for None). A ``host:port`` entry advertises exactly that (e.g. a port nothing holds)."""
    processes: list[subprocess.Popen[bytes]] = []
    brokers: list[LocalBroker] = []
    try:
        for index, advertised_host in enumerate(advertised_hosts):
            port = free_port()
            listen = f"127.0.0.1:{port}"
            host = advertised_host or "127.0.0.1"
            advertised = host if ":" in host else f"{host}:{port}"
            with open(log_dir / f"tansu-{index}-{port}.log", "wb") as log:
                process = subprocess.Popen(
                    [
                        str(tansu_binary()),
                        "broker",
                        "--listener-url",
                        f"tcp://{listen}",
                        "--advertised-listener-url",
                        f"tcp://{advertised}",
                        "--storage-engine",
                        "memory://tansu/",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            processes.append(process)
            brokers.append(LocalBroker(listen, advertised, process.pid))
        for broker in brokers:
            wait_until_answers(broker.listen)
        yield brokers
    finally:
        _stop(processes)


@pytest.fixture(scope="session")
def local_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LocalBroker]]:
    """Three healthy brokers, each advertising the loopback address it listens on."""
    with tansu_brokers([None, None, None], tmp_path_factory.mktemp("tansu")) as brokers:
        yield brokers


@pytest.fixture(scope="session")
def misadvertised_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LocalBroker]]:
    """The seeds' failure: one broker advertising an EC2-internal name, one advertising a dead port."""
    with socket.socket() as held:  # bound, never listening: connections to it are refused, and no one takes it
        held.bind(("127.0.0.1", 0))
        hosts = ["ip-172-31-18-160.us-west-2.compute.internal", f"127.0.0.1:{held.getsockname()[1]}"]
        with tansu_brokers(hosts, tmp_path_factory.mktemp("tansu-bad")) as (internal, refused):
            yield {"internal": internal, "refused": refused}
