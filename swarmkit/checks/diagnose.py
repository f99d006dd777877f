"""`swarmkit listeners diagnose`: can a client on this machine really use every broker a cluster advertises?

The seeds' failure is "I can connect to the bootstrap, but the client still fails": the bootstrap's
metadata advertises broker addresses this machine cannot resolve or reach. So for every advertised
broker we check, from here: does the name resolve, does the port accept a connection, and does
Kafka at that address answer as the broker it claims to be. Observation (``probe_address``) is
kept apart from judgement (``judge_broker`` / ``judge_cluster``), which is pure and unit-tested.
Works for any Kafka cluster, not only swarmkit's.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from swarmkit import names, numbers
from swarmkit.errors import BrokerError, SpecError
from swarmkit.fanout import fan_out, settle_by
from swarmkit.kafka import admin
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity

DEFAULT_TIMEOUT = 3.0

Connect = Literal["ok", "refused", "timeout", "unreachable", "error", "skipped"]
HostKind = Literal["wildcard", "loopback", "container-id", "internal-name", "bare-name", "ip", "name"]

CONTAINER_ID = re.compile(r"[0-9a-f]{12}([0-9a-f]{52})?")
INTERNAL_SUFFIXES = (".internal", ".local", ".localdomain", ".lan", ".intranet", ".cluster.local", ".svc")

FIX_ADVERTISE = (
    "advertise an address clients can resolve and reach: set advertised.listeners "
    "(KAFKA_ADVERTISED_LISTENERS) for the external listener; with swarmkit use "
    "--advertise inventory-address, or a HOSTNAME_COMMAND that prints a name clients resolve "
    "(e.g. the cloud metadata public-hostname). An /etc/hosts entry on each client is only a workaround"
)
FIX_PORT = (
    "advertise the listener meant for clients on this network (the host-mode published external port, "
    "9094 by default, not the internal one) and check that the broker runs on that node"
)
FIX_OWN_ADDRESS = (
    "give every broker its own node's address (swarmkit's default: the node's hostname, or --advertise inventory-address)"
)
FIX_NOT_KAFKA = "check listener.security.protocol.map and which process holds the port on that node"
FIX_CLIENT_CONFIG = "connect with the cluster's client configuration (swarmkit client-config -i INV [--user NAME])"
FIX_CERTIFICATE = "give each broker a certificate naming the host it advertises (swarmkit deploy issues them)"
FIX_SLOW_LOGIN = (
    "let the broker name its own addresses without DNS: deploy with swarmkit (its containers list them in "
    "/etc/hosts), or give the servers' DNS a reverse zone for the Docker networks (docs/security.md)"
)
FIX_SLOW = "see the broker's host: CPU, memory and disk pressure (swarmkit status), or a slow link to it"
# A new client's first metadata answer (connection, TLS, SASL login included) takes ~0.1 s; past this it is
# noted as slow, and past the probe's own timeout it fails, named slow rather than unreachable: a broker that
# connects is given LATE_ANSWER times the timeout to answer late.
SLOW_ANSWER_S = 1.0
LATE_ANSWER = 2.0
# (what librdkafka says, the verdict): the first that matches names a TLS or SASL failure
SECURITY_FAILURES = (
    (
        ("hostname mismatch", "ip address mismatch"),
        "hostname mismatch: the broker's certificate does not name the host it advertises",
        FIX_CERTIFICATE,
    ),
    (
        ("certificate verify failed", "unable to get local issuer", "self-signed certificate", "self signed certificate"),
        "unknown CA: the broker's certificate is not signed by a CA this client trusts",
        FIX_CLIENT_CONFIG,
    ),
    (
        ("authentication failed", "invalid credentials", "sasl authentication error"),
        "authentication failed: the broker refused this client's SASL login (user or password)",
        FIX_CLIENT_CONFIG,
    ),
    (
        ("alert bad certificate", "alert certificate required", "alert unknown ca"),
        "client certificate refused: the listener wants mutual TLS and refused this client's certificate "
        "(none given, or not signed by the cluster's CA)",
        FIX_CLIENT_CONFIG,
    ),
    (
        ("ssl handshake failed", "connecting to a ssl listener", "incorrect security.protocol"),
        "TLS handshake failed: the listener and this client do not speak the same security protocol",
        FIX_CLIENT_CONFIG,
    ),
)
PLAIN_TO_TLS = "the listener speaks TLS: incorrect security.protocol for this client"
FIX_FIREWALL = (
    "open the port from clients to the broker (cloud security group / iptables), or advertise the listener meant for this network"
)


@dataclass(frozen=True)
class Probe:
    """What this machine observed at one advertised address; filled by ``probe_address``."""

    host: str
    port: int
    addresses: tuple[str, ...] = ()
    resolve_error: str = ""
    connect: Connect = "skipped"
    connect_error: str = ""
    answered: bool = False
    answered_cluster_id: str | None = None
    answered_brokers: tuple[tuple[int, str], ...] = ()
    metadata_error: str = ""
    metadata_ms: float | None = None  # the metadata request's round trip, a new client's connection included
    allowed_s: float = DEFAULT_TIMEOUT  # the probe's timeout: a later answer is a slow broker
    login: str = ""  # the client's security protocol (SASL_SSL, SSL), empty in plain text


@dataclass(frozen=True)
class BrokerCheck:
    """The one per-broker verdict: diagnose judges advertised addresses with it, verify extends it per node."""

    node_id: int
    advertised: str
    resolves: bool
    reachable: bool
    metadata_ok: bool
    detail: str
    cause: str = ""
    fix: str = ""
    metadata_ms: float | None = None  # how long the metadata request at the advertised address took

    @property
    def ok(self) -> bool:
        return self.resolves and self.reachable and self.metadata_ok and not self.fix

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass(frozen=True)
class DiagnoseReport:
    bootstrap: str
    ok: bool
    brokers: tuple[BrokerCheck, ...]
    cluster_id: str | None = None
    controller_id: int | None = None
    bootstrap_check: BrokerCheck | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "bootstrap": self.bootstrap,
            "ok": self.ok,
            "cluster_id": self.cluster_id,
            "controller_id": self.controller_id,
            "brokers": [b.to_dict() for b in self.brokers],
            "bootstrap_check": self.bootstrap_check.to_dict() if self.bootstrap_check else None,
        }


def endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_endpoint(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); SpecError otherwise."""
    host, sep, port = text.strip().rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    port_ok = numbers.WHOLE.fullmatch(port) and 0 < int(port) < 65536
    if not sep or not host or not host.isprintable() or " " in host or not port_ok:
        raise SpecError(f"{names.shown(text)} is not HOST:PORT (port 1-65535)", hint="e.g. --bootstrap broker1.example.com:9094")
    return host, int(port)


def split_bootstrap(text: str) -> list[tuple[str, int]]:
    """``HOST:PORT[,HOST:PORT...]`` as ``bootstrap.servers`` takes it: every address checked."""
    return [split_endpoint(part) for part in text.split(",")]


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def classify_host(host: str) -> HostKind:
    """What kind of name a broker advertises, in the seeds' terms."""
    name = host.lower().rstrip(".")
    ip = _ip(name)
    if ip is not None:
        if ip.is_unspecified:
            return "wildcard"
        return "loopback" if ip.is_loopback else "ip"
    if name == "localhost" or name.endswith(".localhost"):
        return "loopback"
    if CONTAINER_ID.fullmatch(name):
        return "container-id"
    if name.endswith(INTERNAL_SUFFIXES):
        return "internal-name"
    return "name" if "." in name else "bare-name"


def _unresolved_cause(host: str, kind: HostKind) -> str:
    if kind == "container-id":
        return (
            f"advertises '{host}', a container id (Docker's default hostname): it resolves only "
            "inside that container's Docker network"
        )
    if kind == "internal-name":
        return (
            f"advertises '{host}', an internal hostname (like an EC2 private DNS name): it resolves "
            "only inside the broker's own network, not from this client"
        )
    if kind == "bare-name":
        return f"advertises '{host}', a bare host or container name that this machine cannot resolve"
    return f"advertises '{host}', a name this machine cannot resolve (DNS)"


def _private_note(probe: Probe) -> str:
    ips = [ip for ip in map(_ip, probe.addresses) if ip is not None]
    if ips and all(ip.is_private and not ip.is_loopback for ip in ips):
        return " It is a private address: Docker-internal and cloud-VPC networks are not routable from outside."
    return ""


Finding = tuple[str, str, str]  # (detail, cause, fix) of a check that failed


def judge_broker(node_id: int, probe: Probe, client_local: bool, cluster_id: str | None = None) -> BrokerCheck:
    """The verdict for one advertised broker address.

    ``client_local``: the bootstrap was a loopback address, so advertising localhost is fine here.
    ``cluster_id``: the bootstrap's cluster; a broker answering for another cluster is someone else.
    """
    where = endpoint(probe.host, probe.port)
    finding = (
        _address_finding(node_id, probe, where, client_local)
        or _connection_finding(probe, where)
        or _answer_finding(node_id, probe, where, cluster_id)
        or _late_finding(probe, where)
    )
    addresses = ", ".join(probe.addresses)
    detail, cause, fix = finding or (
        f"broker {node_id} at {where} resolves ({addresses}), accepts connections and answers as itself",
        "",
        "",
    )
    if not finding and (slow := _slow_note(probe)):
        detail = f"{detail}; {slow}"
    reached = (bool(probe.addresses), probe.connect == "ok", probe.answered)
    return BrokerCheck(node_id, where, *reached, detail, cause, fix, metadata_ms=probe.metadata_ms)


def _slowness(probe: Probe) -> str:
    """Why a new client's first answer took long: a SASL login that waits on the broker, or the broker itself."""
    if probe.login.startswith("SASL"):
        return "slow SASL handshake (the broker looks up a name for its own address: reverse DNS)"
    return "slow broker (CPU, memory or disk pressure) or a slow link"


def _slow_note(probe: Probe) -> str:
    """A warning for an answer slower than a client expects but within the probe's timeout."""
    seconds = (probe.metadata_ms or 0) / 1000
    return f"warning: answered in {seconds:.1f} s: {_slowness(probe)}" if seconds > SLOW_ANSWER_S else ""


def _late_finding(probe: Probe, where: str) -> Finding | None:
    """An answer that came, but after the probe's timeout: the broker is reachable, and slow."""
    seconds = (probe.metadata_ms or 0) / 1000
    if not probe.answered or seconds <= probe.allowed_s:
        return None
    detail = f"{where} answered in {seconds:.1f} s, more than the {probe.allowed_s:g} s allowed: {_slowness(probe)}"
    return detail, _slowness(probe), FIX_SLOW_LOGIN if probe.login.startswith("SASL") else FIX_SLOW


def _address_finding(node_id: int, probe: Probe, where: str, client_local: bool) -> Finding | None:
    """An advertised address no remote client can use, whatever the network does."""
    kind = classify_host(probe.host)
    if kind == "wildcard":
        cause = f"advertises {probe.host}, the bind-all address of `listeners`: it is not an address a client can connect to"
        return f"broker {node_id} advertises {where}", cause, FIX_ADVERTISE
    if kind == "loopback" and not client_local:
        cause = (
            f"advertises {probe.host}: only a client on the broker's own machine can use it; any other client "
            "connects to itself (the seeds' localhost listener)"
        )
        return f"broker {node_id} advertises {where}", cause, FIX_ADVERTISE
    if not probe.addresses:
        detail = f"{where} does not resolve from here: {probe.resolve_error or 'no address'}"
        return detail, _unresolved_cause(probe.host, kind), FIX_ADVERTISE
    return None


def _connection_finding(probe: Probe, where: str) -> Finding | None:
    addresses = ", ".join(probe.addresses)
    if probe.connect == "refused":
        cause = (
            f"nothing accepts connections at {where}: the broker is down there, or this is the wrong listener "
            "for this network (an internal port rather than the published external one)." + _private_note(probe)
        )
        return f"{where} resolves to {addresses} but refuses connections", cause, FIX_PORT
    if probe.connect in ("timeout", "unreachable", "error"):
        what = {"timeout": "connections time out", "unreachable": "there is no route to it"}.get(
            probe.connect, probe.connect_error or "the connection fails"
        )
        cause = (
            f"{where} cannot be reached from here: a firewall or security group drops the traffic, or the "
            "address belongs to a network this client is not on (the wrong listener for this network)." + _private_note(probe)
        )
        return f"{where} resolves to {addresses} but {what}", cause, FIX_FIREWALL
    return None


def _answer_finding(node_id: int, probe: Probe, where: str, cluster_id: str | None) -> Finding | None:
    """Something answered at the address: is it Kafka, this cluster, and this very broker?"""
    security = security_failure(probe.metadata_error)
    if not probe.answered and security is not None:
        return f"{where} accepts connections but {security[0].split(':')[0]}: {probe.metadata_error}", *security
    if not probe.answered:
        cause = (
            f"something at {where} is not a Kafka listener this client can talk to: another service holds the "
            "port, or the listener expects TLS/SASL"
        )
        return (
            f"{where} accepts connections but gives no Kafka metadata: {probe.metadata_error or 'no answer'}",
            cause,
            FIX_NOT_KAFKA,
        )
    if cluster_id is not None and probe.answered_cluster_id != cluster_id:
        cause = f"{where} leads to a broker of another cluster: the advertised address points at the wrong machine"
        return f"{where} answers for cluster {probe.answered_cluster_id}, not {cluster_id}", cause, FIX_OWN_ADDRESS
    if dict(probe.answered_brokers).get(node_id) != where:
        answered_as = ", ".join(f"broker {n} at {e}" for n, e in probe.answered_brokers) or "no broker"
        cause = (
            f"{where} leads to a different broker than {node_id}: several brokers advertise the same address, or "
            "the port is published on another node"
        )
        return f"{where} answers, but its metadata lists {answered_as}", cause, FIX_OWN_ADDRESS
    return None


def security_failure(message: str) -> tuple[str, str] | None:
    """(cause, fix) when a client's error is a TLS or SASL failure, each kind its own verdict."""
    lowered = message.lower()
    for needles, cause, fix in SECURITY_FAILURES:
        if any(needle in lowered for needle in needles):
            return cause, fix
    return None


def judge_bootstrap(probe: Probe) -> BrokerCheck:
    """Why the bootstrap address itself gave no metadata (node id -1, as kafkacat shows it)."""
    where = endpoint(probe.host, probe.port)
    resolves, reachable = bool(probe.addresses), probe.connect == "ok"

    def check(detail: str, cause: str, fix: str) -> BrokerCheck:
        return BrokerCheck(-1, where, resolves, reachable, False, detail, cause, fix)

    if not resolves:
        return check(
            f"{where} does not resolve from here: {probe.resolve_error or 'no address'}",
            "the bootstrap name does not resolve on this machine",
            "pass a name or address of a broker node that this machine resolves (its public address)",
        )
    if probe.connect == "refused":
        return check(
            f"{where} refuses connections",
            "nothing listens at the bootstrap address: the broker is down or this is not its client port",
            "check that the broker runs and that its external port (9094 by default) is published on that node",
        )
    if not reachable:
        return check(
            f"{where} cannot be reached: {probe.connect_error or probe.connect}",
            "a firewall or security group drops traffic to the bootstrap port, or its network is not routable "
            "from here." + _private_note(probe),
            FIX_FIREWALL,
        )
    if probe.answered:
        return check(
            "no Kafka metadata within the timeout, then an answer on a second try",
            "the bootstrap broker answers slowly",
            "check the broker's log (it may still be starting) or raise the timeout",
        )
    security = security_failure(probe.metadata_error)
    if security is not None:
        return check(f"{where} accepts connections but {security[0].split(':')[0]}: {probe.metadata_error}", *security)
    return check(
        f"{where} accepts connections but gives no Kafka metadata: {probe.metadata_error or 'no answer'}",
        "the bootstrap port is not a Kafka listener this client can talk to (another service, or TLS/SASL)",
        FIX_NOT_KAFKA,
    )


def _shared(check: BrokerCheck, owners: tuple[int, ...]) -> BrokerCheck:
    others = ", ".join(str(n) for n in owners if n != check.node_id)
    cause = f"brokers {check.node_id} and {others} all advertise {check.advertised}: clients reach only one of them"
    return replace(check, cause=cause, fix=FIX_OWN_ADDRESS)


def judge_cluster(
    bootstrap: str,
    metadata: admin.ClusterMetadata | None,
    probes: Mapping[int, Probe],
    bootstrap_probe: Probe | None = None,
    unanswered: Sequence[Probe] = (),
) -> DiagnoseReport:
    """The whole verdict: one check per advertised broker, or why the bootstrap itself gave nothing (with
    ``unanswered``, the other bootstrap addresses that accepted no connection either, named in its detail)."""
    host, port = split_bootstrap(bootstrap)[0]
    client_local = classify_host(host) == "loopback"
    if metadata is None:
        check = judge_bootstrap(bootstrap_probe or Probe(host, port))
        others = [judge_bootstrap(probe).detail for probe in unanswered]
        check = replace(check, detail="; ".join([check.detail, *others])) if others else check
        return DiagnoseReport(bootstrap, False, (), bootstrap_check=check)
    checks = [judge_broker(b.node_id, probes[b.node_id], client_local, metadata.cluster_id) for b in metadata.brokers]
    owners: dict[str, tuple[int, ...]] = {}
    for check in checks:
        owners[check.advertised] = owners.get(check.advertised, ()) + (check.node_id,)
    checks = [_shared(c, owners[c.advertised]) if len(owners[c.advertised]) > 1 else c for c in checks]
    ok = bool(checks) and all(c.ok for c in checks)
    return DiagnoseReport(bootstrap, ok, tuple(checks), metadata.cluster_id, metadata.controller_id)


def _resolve(host: str, port: int, timeout: float) -> tuple[tuple[str, ...], str]:
    """Name lookup bounded by ``timeout``: a resolver that hangs is a finding, not a hang."""
    (outcome,) = settle_by([lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)], time.monotonic() + timeout)
    if isinstance(outcome, TimeoutError):
        return (), f"name lookup took longer than {timeout:g}s"
    if isinstance(outcome, Exception):
        return (), (outcome.strerror if isinstance(outcome, OSError) else None) or str(outcome)
    return tuple(dict.fromkeys(str(info[4][0]) for info in outcome)), ""


def _connect(addresses: tuple[str, ...], port: int, timeout: float) -> tuple[Connect, str]:
    outcome: tuple[Connect, str] = ("error", "no address")
    for address in addresses:
        try:
            with socket.create_connection((address, port), timeout=timeout):
                return "ok", ""
        except ConnectionRefusedError:
            outcome = ("refused", f"{address}: connection refused")
        except TimeoutError:
            outcome = ("timeout", f"{address}: no answer within {timeout:g}s")
        except OSError as exc:
            kind: Connect = "unreachable" if exc.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH) else "error"
            outcome = (kind, f"{address}: {exc.strerror or exc}")
    return outcome


def _speaks_tls(host: str, port: int, timeout: float) -> bool:
    """Whether the port completes a TLS handshake (a plain-text client then cannot talk to it)."""
    try:
        pki.presented_certificate(host, port, timeout)
    except (OSError, ValueError):
        return False
    return True


def probe_address(
    host: str,
    port: int,
    timeout: float = DEFAULT_TIMEOUT,
    security: ClientSecurity | None = None,
    refused: BrokerError | None = None,
) -> Probe:
    """Observe one address from here: name lookup, TCP connect, then Kafka metadata; each step bounded.

    ``refused``: the metadata request already failed with this (no second wait for the same answer)."""
    reached = _reach(host, port, timeout)
    if reached.connect != "ok":
        return reached
    addresses, started = reached.addresses, time.monotonic()
    if refused is None:
        try:
            md = admin.broker_metadata(endpoint(host, port), timeout * LATE_ANSWER, security)
        except BrokerError as exc:
            refused = exc
    elapsed_ms = round((time.monotonic() - started) * 1000, 1)
    if refused is not None:
        said = refused.message
        said = said if security or not _speaks_tls(host, port, timeout) else f"{said} ({PLAIN_TO_TLS})"
        return Probe(host, port, addresses, connect="ok", metadata_error=said)
    return Probe(
        host,
        port,
        addresses,
        connect="ok",
        answered=True,
        answered_cluster_id=md.cluster_id,
        answered_brokers=tuple((b.node_id, endpoint(b.host, b.port)) for b in md.brokers),
        metadata_ms=elapsed_ms,
        allowed_s=timeout,
        login=security.protocol if security else "",
    )


def _reach(host: str, port: int, timeout: float) -> Probe:
    """Name lookup and TCP connect only, each bounded by ``timeout`` (a refusal comes back at once)."""
    addresses, resolve_error = _resolve(host, port, timeout)
    if not addresses:
        return Probe(host, port, resolve_error=resolve_error)
    connect, connect_error = _connect(addresses, port, timeout)
    return Probe(host, port, addresses, connect=connect, connect_error=connect_error)


def diagnose(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> DiagnoseReport:
    """Ask the bootstrap addresses that accept a connection for metadata (none: the first's failure, at once,
    without waiting for a Kafka answer), then probe every advertised broker from here, in parallel (over
    TLS/SASL with ``security``: the cluster's client configuration)."""
    reached = fan_out(lambda address: _reach(*address, timeout), split_bootstrap(bootstrap))
    connected = [probe for probe in reached if probe.connect == "ok"]
    if not connected:
        return judge_cluster(bootstrap, None, {}, reached[0], reached[1:])
    try:
        metadata = admin.broker_metadata(",".join(endpoint(p.host, p.port) for p in connected), timeout, security)
    except BrokerError as refused:
        first = connected[0]
        return judge_cluster(bootstrap, None, {}, probe_address(first.host, first.port, timeout, security, refused))
    probes = fan_out(lambda broker: probe_address(broker.host, broker.port, timeout, security), metadata.brokers)
    return judge_cluster(bootstrap, metadata, {b.node_id: probe for b, probe in zip(metadata.brokers, probes)})
