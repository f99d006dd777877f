"""Preflight: prove, before anything is changed, that the server group can carry a swarm and Kafka.

Every engine must answer; every port the cluster needs must be free on its host and reachable
from every other host (the client port also from this machine); every host needs memory for a
broker. Reachability is checked with real traffic, because a firewall rule can only be seen by
sending a packet through it: a probe container on each host (host network) listens on the
ports, then a script run in that same container connects to every other host (TCP) or sends a
datagram that must be echoed back (UDP). All hosts and all their probes work at once, so the wall
time stays near one probe round however many pairs there are.
"""

from __future__ import annotations

import functools
import ipaddress
import shlex
import socket
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import TypeVar

from swarmkit import waits
from swarmkit.assets import STACKS_DIR
from swarmkit.errors import PreflightError, SpecError, SshError, SwarmkitError
from swarmkit.fanout import settle_by
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, EngineInfo, SwarmState
from swarmkit.hosts.inventory import Host, Inventory

GIB = 1024**3
DEFAULT_MEMORY_PER_BROKER = int(1.5 * GIB)
DEFAULT_TIMEOUT = 60.0
CONNECT_TIMEOUT = 1.5
UDP_ATTEMPTS = 4  # a datagram lost on a busy host is not a blocked port; a blocked one costs 4 s
UDP_WAIT = 1.0
CLIENT = "this machine"
PROBE_LABEL = "swarmkit.probe"
PROBE_LABEL_FILTER = f"{PROBE_LABEL}=1"
MIN_ENGINE_VERSION = (19, 3)
SWARM_PORTS = frozenset({(2377, "tcp"), (7946, "tcp"), (7946, "udp"), (4789, "udp")})
IN_USE_BY_SWARM = "in use by this swarm"
NO_ECHO = f"no echo came back ({UDP_ATTEMPTS} datagrams, {UDP_WAIT:g} s each)"

T = TypeVar("T")


@dataclass(frozen=True)
class PortSpec:
    """A port the cluster needs, and why (the why goes into the fix the user reads)."""

    port: int
    protocol: str
    purpose: str
    managers_only: bool = False
    from_client: bool = False

    @property
    def key(self) -> str:
        return f"{self.port}/{self.protocol}"


@dataclass(frozen=True)
class Probe:
    """One ordered pair and port: traffic from ``source`` must reach ``target`` at ``address``."""

    source: str
    target: str
    address: str
    port: PortSpec


@dataclass(frozen=True)
class EngineStatus:
    host: str
    endpoint: str
    answered: bool
    version: str = ""
    hostname: str = ""
    swarm_state: str = ""
    swarm_cluster_id: str = ""
    memory_bytes: int = 0
    error: str = ""
    swarm_node_id: str = ""
    hint: str = ""  # the fix the error named (e.g. an SSH failure's)

    @property
    def in_swarm(self) -> bool:
        return self.answered and self.swarm_state not in ("", SwarmState.INACTIVE)

    def engine_info(self) -> EngineInfo | None:
        """What the engine answered, as the swarm step reads it; None when it did not answer."""
        if not self.answered:
            return None
        return EngineInfo(
            self.endpoint,
            self.version,
            self.hostname,
            SwarmState(self.swarm_state),
            self.swarm_node_id,
            self.swarm_cluster_id,
            self.memory_bytes,
        )


@dataclass(frozen=True)
class Check:
    """One thing preflight looked at; status is ok, failed, or note (fine, but worth knowing)."""

    check: str
    status: str
    to: str
    from_: str = ""
    port: int | None = None
    protocol: str = ""
    detail: str = ""
    fix: str = ""  # when the failure named its own fix

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "status": self.status,
            "from": self.from_,
            "to": self.to,
            "port": self.port,
            "protocol": self.protocol,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Failure:
    check: str
    from_: str
    to: str
    port: int | None
    protocol: str
    detail: str
    fix: str

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "from": self.from_,
            "to": self.to,
            "port": self.port,
            "protocol": self.protocol,
            "detail": self.detail,
            "fix": self.fix,
        }

    @property
    def summary(self) -> str:
        """One line that stands on its own (the detail of a reachability failure is only the why)."""
        if self.check == "reachable":
            return f"{self.from_} cannot reach {self.to} on {self.port}/{self.protocol} ({self.detail})"
        return f"{self.to}: {self.detail}"


@dataclass(frozen=True)
class PreflightReport:
    ok: bool
    engines: tuple[EngineStatus, ...]
    checks: tuple[Check, ...]
    failures: tuple[Failure, ...]
    ports: tuple[PortSpec, ...]
    duration_s: float = 0.0

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "duration_s": round(self.duration_s, 2),
            "engines": [asdict(e) for e in self.engines],
            "ports": [asdict(p) for p in self.ports],
            "checks": [c.to_dict() for c in self.checks],
            "failures": [f.to_dict() for f in self.failures],
        }

    def error(self) -> PreflightError:
        """The one-line error for commands that stop on a failed preflight (``swarmkit up``)."""
        first = self.failures[0]
        more = f" (and {len(self.failures) - 1} more problems: see swarmkit preflight)" if len(self.failures) > 1 else ""
        return PreflightError(f"preflight failed: {first.summary}{more}", hint=first.fix)


# --- planning (pure) ------------------------------------------------------------------------


def cluster_ports(client_port: int = 9094, internal_port: int = 9092) -> tuple[PortSpec, ...]:
    if client_port == internal_port or (client_port, "tcp") in SWARM_PORTS or (internal_port, "tcp") in SWARM_PORTS:
        raise SpecError(
            f"ports {internal_port} (internal) and {client_port} (client) must differ from each other and from 2377/7946",
            hint="pick another --external-port (client) or --internal-port",
        )
    return (
        PortSpec(2377, "tcp", "swarm management", managers_only=True),
        PortSpec(7946, "tcp", "swarm node gossip"),
        PortSpec(7946, "udp", "swarm node gossip"),
        PortSpec(4789, "udp", "VXLAN overlay traffic"),
        PortSpec(internal_port, "tcp", "Kafka internal listener"),
        PortSpec(client_port, "tcp", "Kafka client listener", from_client=True),
    )


def ports_on(host: Host, ports: Sequence[PortSpec]) -> tuple[PortSpec, ...]:
    """The ports a host must hold open: the management port only on managers."""
    return tuple(p for p in ports if host.is_manager or not p.managers_only)


def plan_probes(hosts: Sequence[Host], ports: Sequence[PortSpec]) -> list[Probe]:
    """Every ordered pair of distinct hosts for every port the target holds, plus this machine to the client port."""
    probes = []
    for target in hosts:
        for port in ports_on(target, ports):
            probes += [Probe(s.name, target.name, target.address, port) for s in hosts if s.name != target.name]
            if port.from_client:
                probes.append(Probe(CLIENT, target.name, target.address, port))
    return probes


# --- probe scripts and their output (pure) --------------------------------------------------


def listener_script(ports: Sequence[PortSpec], lifetime: float) -> str:
    """socat on every port; each reports BOUND or BUSY (the bind error) and the container ends by itself."""
    lines = [(STACKS_DIR / "probe" / "listen.sh").read_text(encoding="utf-8")]
    for port in ports:
        address = (
            f"TCP-LISTEN:{port.port},fork,reuseaddr /dev/null"
            if port.protocol == "tcp"
            else f"UDP-RECVFROM:{port.port},fork PIPE"
        )
        lines.append(f"(socat -d -d {address} 2>&1 | report {port.key}) &")
    lines.append(f"sleep {max(1, int(lifetime))}")
    return "\n".join(lines)


def parse_listener(output: str) -> dict[str, str]:
    """port key -> "" when our listener holds it, else the bind error; the first word on a port counts."""
    status: dict[str, str] = {}
    for line in output.splitlines():
        word, _, rest = line.partition(" ")
        key, _, detail = rest.partition(" ")
        if word == "BOUND":
            status.setdefault(key, "")
        elif word == "BUSY":
            status.setdefault(key, detail.strip() or "cannot bind")
    return status


def socat_address(protocol: str, address: str, port: int) -> str:
    try:
        if ipaddress.ip_address(address).version == 6:
            return f"{protocol.upper()}6:[{address}]:{port}"
    except ValueError:
        pass
    return f"{protocol.upper()}:{address}:{port}"


def echo_token(probe: Probe) -> str:
    return f"swarmkit-probe:{probe.source}:{probe.target}:{probe.port.port}"


def prober_script(probes: Sequence[Probe]) -> str:
    """All probes of one source host at once, each printing ``PROBE <index> OK|FAIL <why>``."""
    lines = [
        f"CONNECT_TIMEOUT={CONNECT_TIMEOUT:g} UDP_ATTEMPTS={UDP_ATTEMPTS} UDP_WAIT={UDP_WAIT:g}",
        (STACKS_DIR / "probe" / "probe.sh").read_text(encoding="utf-8"),
    ]
    for index, probe in enumerate(probes):
        target = shlex.quote(socat_address(probe.port.protocol, probe.address, probe.port.port))
        if probe.port.protocol == "tcp":
            lines.append(f"tcp {index} {target} &")
        else:
            # readbytes: the echo (token and newline) ends the exchange instead of a timeout
            token = echo_token(probe)
            lines.append(f"udp {index} {target},readbytes={len(token) + 1} {shlex.quote(token)} &")
    lines.append("wait")
    return "\n".join(lines)


def parse_prober(output: str, count: int) -> list[tuple[bool, str]]:
    """(reached, why not) per probe index; a probe that printed nothing did not complete."""
    results: list[tuple[bool, str]] = [(False, "the probe did not complete")] * count
    for line in output.splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3 and parts[0] == "PROBE" and parts[1].isdigit() and int(parts[1]) < count:
            reached = parts[2] == "OK"
            results[int(parts[1])] = (reached, "" if reached else (parts[3].strip() if len(parts) > 3 else ""))
    return results


def _reach_detail(probe: Probe, why: str) -> str:
    if not why:
        why = NO_ECHO if probe.port.protocol == "udp" else "connection failed"
    return f"{probe.address}:{probe.port.port}: {why}"


# --- verdicts (pure) ------------------------------------------------------------------------


def _version_tuple(version: str) -> tuple[int, ...]:
    numbers = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    return tuple(numbers)


def engine_checks(engines: Sequence[EngineStatus], memory_per_broker: int) -> list[Check]:
    checks = []
    for engine in engines:
        if not engine.answered:
            checks.append(Check("engine", "failed", engine.host, CLIENT, detail=engine.error, fix=engine.hint))
            continue
        swarm = (
            f", {engine.swarm_state} in swarm {engine.swarm_cluster_id or '(id known to managers)'}" if engine.in_swarm else ""
        )
        if _version_tuple(engine.version) < MIN_ENGINE_VERSION:
            checks.append(
                Check("engine", "failed", engine.host, CLIENT, detail=f"Docker Engine {engine.version} is too old for stacks")
            )
        else:
            checks.append(
                Check(
                    "engine",
                    "note" if engine.in_swarm else "ok",
                    engine.host,
                    CLIENT,
                    detail=f"Docker Engine {engine.version}{swarm}",
                )
            )
        enough = engine.memory_bytes >= memory_per_broker
        checks.append(
            Check(
                "memory",
                "ok" if enough else "failed",
                engine.host,
                detail=f"{_gib(engine.memory_bytes)} total, a broker needs {_gib(memory_per_broker)}",
            )
        )
    return checks


def _gib(value: int) -> str:
    return f"{value / GIB:.1f} GiB"


def _joined(names: Sequence[str]) -> str:
    return ", ".join(dict.fromkeys(names))


def fix_for(check: Check, failed_checks: Sequence[Check], ports: Sequence[PortSpec], hosts: dict[str, Host]) -> str:
    """What the user should do, naming every source that failed the same way, so one fix covers the group."""
    if check.fix:
        return check.fix
    key = f"{check.port}/{check.protocol}"
    purpose = next((p.purpose for p in ports if p.key == key), "")
    if check.check == "reachable":
        sources = [
            c.from_
            for c in failed_checks
            if c.check == "reachable" and (c.to, c.port, c.protocol) == (check.to, check.port, check.protocol)
        ]
        return f"open {key} inbound on {check.to} from {_joined(sources)} ({purpose})"
    if check.check == "port_free":
        return f"stop or move what holds {key} on {check.to}: the cluster needs it for the {purpose}"
    if check.check == "engine" and check.detail.startswith("Docker Engine"):
        return f"upgrade Docker Engine on {check.to} to {'.'.join(map(str, MIN_ENGINE_VERSION))} or newer"
    if check.check == "engine":
        endpoint = hosts[check.to].endpoint if check.to in hosts else "its endpoint"
        return f"make the Docker engine of {check.to} answer at {endpoint}: start dockerd there, check the endpoint and that this machine may reach it"
    if check.check == "memory":
        return f"give {check.to} more memory, or lower the memory per broker (--memory-per-broker)"
    return f"make {check.to} able to run the probe image: {check.detail}"


def build_report(
    engines: Sequence[EngineStatus],
    checks: Sequence[Check],
    ports: Sequence[PortSpec],
    hosts: Sequence[Host],
    duration_s: float = 0.0,
) -> PreflightReport:
    failed = [c for c in checks if c.status == "failed"]
    by_name = {h.name: h for h in hosts}
    failures = tuple(
        Failure(c.check, c.from_, c.to, c.port, c.protocol, c.detail, fix_for(c, failed, ports, by_name)) for c in failed
    )
    return PreflightReport(not failures, tuple(engines), tuple(checks), failures, tuple(ports), duration_s)


# --- running ----------------------------------------------------------------------------------


def _message(error: Exception) -> str:
    return error.message if isinstance(error, SwarmkitError) else str(error) or type(error).__name__


def _hint(error: Exception) -> str:
    """The fix an SSH failure names (host key, key, Docker access...): better than the generic one."""
    return error.hint if isinstance(error, SshError) else ""


def _engine_status(host: Host, docker: Engine) -> EngineStatus:
    info = dockerapi.engine_info(docker)
    return EngineStatus(
        host.name,
        host.endpoint,
        True,
        info.version,
        info.hostname,
        info.swarm_state,
        info.swarm_cluster_id,
        info.memory_bytes,
        swarm_node_id=info.swarm_node_id,
    )


def _port_free_check(host: Host, docker: Engine, engine: EngineStatus, port: PortSpec, bind_error: str) -> Check:
    """Who holds a busy port decides: this swarm is fine, anything else is in the way."""
    base = Check("port_free", "ok", host.name, port=port.port, protocol=port.protocol)
    if not bind_error:
        return base
    if engine.in_swarm and (port.port, port.protocol) in SWARM_PORTS:
        return replace(base, status="note", detail=IN_USE_BY_SWARM)
    publishers = dockerapi.port_publishers(docker, port.port, port.protocol)
    services = [service for _, service in publishers if service]
    if services:
        return replace(base, status="note", detail=f"in use by swarm service '{services[0]}'")
    holder = f"container '{publishers[0][0]}'" if publishers else "another process"
    detail = f"port {port.key} on {host.name} is already in use by {holder} ({bind_error})"
    return replace(base, status="failed", detail=detail)


@dataclass(frozen=True)
class _Listener:
    """A host's probe container (listening on its ports) and what its binds found."""

    host: Host
    docker: Engine
    container: str
    checks: tuple[Check, ...]


def _listen(
    host: Host, docker: Engine, engine: EngineStatus, ports: tuple[PortSpec, ...], image: str, deadline: float
) -> _Listener:
    """Start the probe container on one host and classify each port as soon as its socat reported."""
    dockerapi.remove_labelled_containers(docker, PROBE_LABEL_FILTER)
    dockerapi.ensure_image(docker, image)
    script = listener_script(ports, deadline - time.monotonic() + 5)
    container = dockerapi.start_host_network_script(docker, image, script, {PROBE_LABEL: "1"})
    pause = waits.Pause()
    while True:
        status = parse_listener(dockerapi.container_stdout(docker, container))  # report prints on stdout
        if all(p.key in status for p in ports):
            return _Listener(
                host, docker, container, tuple(_port_free_check(host, docker, engine, p, status[p.key]) for p in ports)
            )
        if time.monotonic() > deadline:
            missing = ", ".join(p.key for p in ports if p.key not in status)
            raise PreflightError(f"the probe listener on {host.name} did not report {missing} in time")
        pause.sleep()


def _probe_from_here(probe: Probe) -> tuple[bool, str]:
    try:
        with socket.create_connection((probe.address, probe.port.port), timeout=CONNECT_TIMEOUT):
            return True, ""
    except TimeoutError:
        return False, "Connection timed out"
    except OSError as error:
        return False, error.strerror or str(error) or "timed out"


def _probe_from_host(listener: _Listener, probes: list[Probe]) -> list[tuple[bool, str]]:
    output = dockerapi.exec_script(listener.docker, listener.container, prober_script(probes))
    return parse_prober(output, len(probes))


def _probe_from_client(probes: list[Probe], deadline: float) -> list[tuple[bool, str]]:
    results = settle_by([functools.partial(_probe_from_here, p) for p in probes], deadline)
    return [r if isinstance(r, tuple) else (False, _message(r)) for r in results]


def _reachability(probes: list[Probe], listeners: dict[str, _Listener], deadline: float) -> list[Check]:
    """Every source sends all its probes at once; checks come back in plan order."""
    sources = list(dict.fromkeys(p.source for p in probes))
    groups = {s: [p for p in probes if p.source == s] for s in sources}
    calls = [
        (lambda s=s: _probe_from_client(groups[s], deadline))
        if s == CLIENT
        else (lambda s=s: _probe_from_host(listeners[s], groups[s]))
        for s in sources
    ]
    checks: list[Check] = []
    results: dict[Probe, tuple[bool, str]] = {}
    for source, outcome in zip(sources, settle_by(calls, deadline)):
        if isinstance(outcome, Exception):
            checks.append(Check("probe", "failed", source, CLIENT, detail=_message(outcome)))
        else:
            results.update(zip(groups[source], outcome))
    for probe in (p for p in probes if p in results):
        reached, why = results[probe]
        checks.append(
            Check(
                "reachable",
                "ok" if reached else "failed",
                probe.target,
                probe.source,
                probe.port.port,
                probe.port.protocol,
                "" if reached else _reach_detail(probe, why),
            )
        )
    return checks


def _probeable(
    probes: list[Probe], port_checks: dict[tuple[str, str], Check], ready: set[str]
) -> tuple[list[Probe], list[Check]]:
    """Drop probes whose source or target has no probe running or whose port another process holds.

    A UDP port the swarm already holds cannot echo: it is noted rather than probed.
    """
    kept, notes = [], []
    for probe in probes:
        if probe.target not in ready or (probe.source != CLIENT and probe.source not in ready):
            continue
        held = port_checks[probe.target, probe.port.key]
        if held.status == "failed":
            continue
        if held.status == "note" and probe.port.protocol == "udp":
            notes.append(
                Check("reachable", "note", probe.target, probe.source, probe.port.port, "udp", f"not probed: {held.detail}")
            )
            continue
        kept.append(probe)
    return kept, notes


def _remove_probes(docker: Engine, listener: _Listener | None) -> None:
    """A host's listener by its id (one call); where none reported, whatever carries the probe label."""
    if listener is None or not dockerapi.force_remove_container(docker, listener.container):
        dockerapi.remove_labelled_containers(docker, PROBE_LABEL_FILTER)


def run_preflight(
    inventory: Inventory,
    *,
    docker: DockerHosts,
    memory_per_broker: int = DEFAULT_MEMORY_PER_BROKER,
    client_port: int = 9094,
    internal_port: int = 9092,
    timeout: float = DEFAULT_TIMEOUT,
) -> PreflightReport:
    """Check everything the cluster needs without changing anything; probe containers never outlive the run.

    Probe containers from an earlier, interrupted run are removed first: they would hold the ports.
    """
    image = inventory.stack.probe_image
    if not image:
        raise PreflightError(
            f"{inventory.path or 'the inventory'}: field 'stack.probe_image' is missing",
            hint="name an image with sh and socat every host can pull, or call images.shipping.with_probe_image first (the CLI does)",
        )
    ports = cluster_ports(client_port, internal_port)
    started = time.monotonic()
    deadline = started + timeout
    outcomes = settle_by([lambda h=h: _engine_status(h, docker[h]) for h in inventory.hosts], deadline)  # type: ignore[misc]  # mypy cannot type lambdas with defaults
    engines = [
        o if isinstance(o, EngineStatus) else EngineStatus(h.name, h.endpoint, False, error=_message(o), hint=_hint(o))
        for h, o in zip(inventory.hosts, outcomes)
    ]
    checks = engine_checks(engines, memory_per_broker)
    answering = [(h, e) for h, e in zip(inventory.hosts, engines) if e.answered]
    listeners: dict[str, _Listener] = {}
    try:
        listened = settle_by(
            [lambda h=h, e=e: _listen(h, docker[h], e, ports_on(h, ports), image, deadline) for h, e in answering],  # type: ignore[misc]
            deadline,
        )
        for (host, _), outcome in zip(answering, listened):
            if isinstance(outcome, Exception):
                checks.append(Check("probe", "failed", host.name, CLIENT, detail=_message(outcome)))
                continue
            listeners[host.name] = outcome
            checks += outcome.checks
        port_checks = {(c.to, f"{c.port}/{c.protocol}"): c for listener in listeners.values() for c in listener.checks}
        probes, notes = _probeable(plan_probes(inventory.hosts, ports), port_checks, set(listeners))
        checks += notes + _reachability(probes, listeners, deadline)
    finally:
        settle_by(
            [lambda h=h: _remove_probes(docker[h], listeners.get(h.name)) for h, _ in answering],  # type: ignore[misc]
            time.monotonic() + 30,
        )
    return build_report(engines, checks, ports, inventory.hosts, time.monotonic() - started)
