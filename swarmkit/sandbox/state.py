"""A sandbox as data: its hosts, firewall rules and images, kept in ``sandbox.json`` in its own directory.

Every name a sandbox gives what it creates (directory, bridge, namespaces) is derived here from the sandbox's
name, so that `down` can find what `up` made even when `up` crashed before writing any state.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from swarmkit import names
from swarmkit.defaults import DEFAULT_ENGINE, EngineName
from swarmkit.errors import SandboxError, SpecError
from swarmkit.hosts.dockerapi import Engine
from swarmkit.images import image
from swarmkit.sandbox import sshd

STATE_ROOT = Path(os.environ.get("SWARMKIT_STATE_DIR", "/var/tmp/swarmkit")) / "sandbox"
REGISTRY_PORT = 5000


@dataclass(frozen=True)
class SandboxHost:
    name: str
    index: int
    address: str
    netns: str
    veth: str
    directory: str
    pid: int = 0
    sshd_pid: int = 0  # a sandbox reached over SSH (sshd.py)

    @property
    def endpoint(self) -> str:
        """The host's own socket: what the sandbox itself uses, whatever the inventory says."""
        return f"unix://{self.directory}/docker.sock"

    @property
    def docker(self) -> Engine:
        """A client of this host's own unix socket (a new one each time; the socket needs no TLS)."""
        return Engine.connect(self.endpoint)


@dataclass(frozen=True)
class FirewallRule:
    host: str
    port: int
    protocol: str

    def __str__(self) -> str:
        return f"{self.host} {self.port}/{self.protocol}"


@dataclass(frozen=True)
class Sandbox:
    name: str
    subnet: str
    prefix: str
    inventory_path: str
    hosts: tuple[SandboxHost, ...] = ()
    registry_pid: int = 0
    images: dict[str, str] = field(default_factory=dict)
    firewall: tuple[FirewallRule, ...] = ()
    engine: EngineName = DEFAULT_ENGINE
    managers: int = 1
    endpoint: str = "unix"  # how the inventory reaches the engines: unix (their sockets) or ssh
    data_limit: str = ""  # each host's broker data disk, e.g. 256m (disks.py); "" for none
    kafka_version: str = image.KAFKA_VERSION  # the apache engine's image: swarmkit/kafka of this version

    @property
    def directory(self) -> Path:
        return STATE_ROOT / self.name

    def inventory_endpoint(self, host: SandboxHost) -> str:
        return f"ssh://{sshd.user_name(self.name)}@{host.name}" if self.endpoint == "ssh" else host.endpoint

    @property
    def bridge(self) -> str:
        return bridge_name(self.name)

    @property
    def gateway(self) -> str:
        return str(next(ipaddress.ip_network(self.subnet).hosts()))

    @property
    def registry(self) -> str:
        return f"{self.gateway}:{REGISTRY_PORT}"

    def host(self, name: str) -> SandboxHost:
        for candidate in self.hosts:
            if candidate.name == name:
                return candidate
        known = ", ".join(h.name for h in self.hosts)
        raise SpecError(f"sandbox '{self.name}' has no host '{name}'", hint=f"hosts are: {known}")


def bridge_name(name: str) -> str:
    return f"skb-{name}"


def netns_prefix(name: str) -> str:
    return f"swk-{name}-"


def directory(name: str) -> Path:
    """The sandbox's own directory under the sandbox root (a checked name: never the root or outside it)."""
    return STATE_ROOT / names.sandbox_name(name)


def state_file(name: str) -> Path:
    return directory(name) / "sandbox.json"


def save(sandbox: Sandbox) -> None:
    sandbox.directory.mkdir(parents=True, exist_ok=True)
    data = asdict(sandbox)
    state_file(sandbox.name).write_text(json.dumps(data, indent=2))


def load(name: str) -> Sandbox:
    path = state_file(name)
    if not path.exists():
        raise SandboxError(f"there is no sandbox '{name}'", hint="create one with: swarmkit sandbox up --nodes 3")
    data = json.loads(path.read_text())
    return Sandbox(
        name=data["name"],
        subnet=data["subnet"],
        prefix=data["prefix"],
        inventory_path=data["inventory_path"],
        hosts=tuple(SandboxHost(**h) for h in data["hosts"]),
        registry_pid=data["registry_pid"],
        images=data["images"],
        firewall=tuple(FirewallRule(**r) for r in data["firewall"]),
        engine=EngineName(data.get("engine", DEFAULT_ENGINE)),
        managers=data.get("managers", 1),
        endpoint=data.get("endpoint", "unix"),
        data_limit=data.get("data_limit", ""),
        kafka_version=data.get("kafka_version", image.KAFKA_VERSION),
    )
