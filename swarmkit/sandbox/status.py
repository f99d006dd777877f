"""What `sandbox status` shows: each host's engine (alive, version, swarm state), the registry and the
firewall rules, read from the state file, /proc and the engines; changes nothing."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from swarmkit.errors import SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.sandbox import processes, state
from swarmkit.sandbox.state import SandboxHost


@dataclass(frozen=True)
class HostStatus:
    name: str
    address: str
    endpoint: str
    engine_pid: int
    engine_alive: bool
    engine_version: str
    swarm_state: str


@dataclass(frozen=True)
class SandboxStatus:
    name: str
    exists: bool
    subnet: str = ""
    bridge: str = ""
    registry: str = ""
    inventory_path: str = ""
    hosts: tuple[HostStatus, ...] = ()
    firewall: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)


def read(name: str) -> SandboxStatus:
    """The sandbox as `sandbox status` shows it; ``exists`` False when it has no state file."""
    if not state.state_file(name).exists():
        return SandboxStatus(name=name, exists=False)
    sandbox = state.load(name)
    running = {pid for pid, _ in processes.all_processes().items()}

    def host_status(host: SandboxHost) -> HostStatus:
        try:
            info = dockerapi.engine_info(host.docker)
            version, swarm = info.version, str(info.swarm_state)
        except SwarmkitError:
            version, swarm = "", "unreachable"
        endpoint = sandbox.inventory_endpoint(host)
        return HostStatus(host.name, host.address, endpoint, host.pid, host.pid in running, version, swarm)

    hosts = tuple(fan_out(host_status, sandbox.hosts))
    return SandboxStatus(
        name=name,
        exists=True,
        subnet=sandbox.subnet,
        bridge=sandbox.bridge,
        registry=sandbox.registry if sandbox.registry_pid in running else "",
        inventory_path=sandbox.inventory_path,
        hosts=hosts,
        firewall=tuple(str(r) for r in sandbox.firewall),
    )
