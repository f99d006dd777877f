"""The server group: who the hosts are, how to reach their engines, and their roles.

``load_inventory`` reads the YAML file ``swarmkit sandbox up`` writes (the same format describes
real servers) and checks everything that can be checked without contacting anything, so a typo
fails in one line that names the file, the host and the field instead of halfway through a deploy.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from swarmkit import files, names
from swarmkit.defaults import DEFAULT_ENGINE
from swarmkit.errors import InventoryError, SpecError
from swarmkit.hosts.metrics_settings import HINT as METRICS_HINT
from swarmkit.hosts.metrics_settings import MetricsSettings, parse_metrics
from swarmkit.hosts.roles import NodeRole

ROLES = tuple(NodeRole)
ENDPOINT_FORMS = "ssh://user@host[:port], tcp://host:port or unix:///path"
HOST_FIELDS = ("name", "endpoint", "address", "role", "labels", "insecure", "tls")
REQUIRED_HOST_FIELDS = ("name", "endpoint", "address")
TOP_FIELDS = ("stack", "hosts", "allow_even_managers", "ssh_config", "ssh_persist", "metrics")
STACK_FIELDS = (
    "engine",
    "image",
    "kafka_version",
    "probe_image",
    "security",
    "advertise",
    "hostname_command",
    "ports",
    "topics",
    "users",
    "quotas",
    "broker_env",
)
TEXT_STACK_FIELDS = ("engine", "image", "kafka_version", "probe_image", "security", "advertise", "hostname_command")
PORT_FIELDS = ("internal", "external")
TOPIC_FIELDS = ("name", "partitions", "replicas", "configs")
QUOTA_ENTITIES = ("user", "client_id")  # the inventory's names of Kafka's quota entity types user and client-id
QUOTA_RATES = ("producer_byte_rate", "consumer_byte_rate", "request_percentage")
QUOTA_HINT = (
    "each entry names user and/or client_id and sets one or more of producer_byte_rate and consumer_byte_rate "
    "(bytes per second, a whole number above 0) and request_percentage (above 0, at most 100: a share of one "
    "request thread's time), e.g. {client_id: bulk-loader, producer_byte_rate: 262144}; see docs/inventory.md"
)
MAX_REQUEST_PERCENTAGE = 100
ZONE_LABEL = "zone"  # a host's labels: {zone: a} becomes its broker's broker.rack
TLS_FIELDS = ("ca", "cert", "key")
LOOPBACK_NAMES = ("localhost",)
T = TypeVar("T")


@dataclass(frozen=True)
class TlsFiles:
    """Client certificate material for a ``tcp://host:2376`` engine, paths resolved against the inventory."""

    ca: str
    cert: str
    key: str


@dataclass(frozen=True)
class Host:
    name: str
    endpoint: str
    address: str
    role: NodeRole = NodeRole.WORKER
    labels: dict[str, str] = field(default_factory=dict)
    insecure: bool = False
    tls: TlsFiles | None = None

    @property
    def is_manager(self) -> bool:
        return self.role == NodeRole.MANAGER


@dataclass(frozen=True)
class DeclaredTopic:
    """A topic as the inventory declares it; its shape is checked here, the rest (names, counts against the
    brokers, settings Kafka knows) as for `--topics`, when a command plans (``ops.plan``)."""

    name: str
    partitions: int
    replicas: int
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DeclaredUser:
    """A client user of a sasl_ssl stack and its whole set of grants (``--allow`` specs, parsed when a command
    plans: ``ops.plan``); its password is made and kept by swarmkit, never written in the inventory."""

    name: str
    allow: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeclaredQuota:
    """Client quotas of one client: a user, a client id, or the two together (Kafka keeps each combination apart)."""

    user: str = ""
    client_id: str = ""
    rates: tuple[tuple[str, float], ...] = ()  # (QUOTA_RATES key, value), in QUOTA_RATES order

    @property
    def entity(self) -> tuple[tuple[str, str], ...]:
        """Kafka's name of the client: its (entity type, name) pairs."""
        return tuple((kind, name) for kind, name in (("user", self.user), ("client-id", self.client_id)) if name)


@dataclass(frozen=True)
class StackDefaults:
    """The inventory's ``stack:`` block: which broker engine and images the hosts run."""

    engine: str = DEFAULT_ENGINE
    image: str = ""
    probe_image: str = ""
    security: str = ""  # sasl_ssl | ssl | plaintext; "" = not set (plaintext unless --security says)
    advertise: str = ""  # hostname | inventory-address | command; "" = not set (hostname)
    hostname_command: str = ""
    internal_port: int | None = None
    external_port: int | None = None
    topics: tuple[DeclaredTopic, ...] = ()
    users: tuple[DeclaredUser, ...] = ()
    quotas: tuple[DeclaredQuota, ...] | None = None  # None: not declared (`up` leaves the cluster's quotas alone)
    broker_env: tuple[tuple[str, str], ...] = ()  # extra broker environment (KAFKA_HEAP_OPTS, KAFKA_* settings)
    kafka_version: str = ""  # X.Y.Z the cluster runs (apache): `up` upgrades to it; "" = whatever the image is
    given: tuple[str, ...] = field(
        default=(), compare=False
    )  # the keys the inventory sets (an option overriding one of them says so)


@dataclass(frozen=True)
class Inventory:
    hosts: tuple[Host, ...]
    path: str = ""
    stack: StackDefaults = field(default_factory=StackDefaults)
    allow_even_managers: bool = False
    ssh_config: str = ""  # an ssh_config file for the ssh:// hosts (ssh -F), resolved; "" = ssh's own defaults
    ssh_persist: int | None = None  # seconds an idle SSH connection outlives its command; None = not set (the default)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)  # where alerts go, lag and disk thresholds

    @property
    def managers(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.is_manager)

    @property
    def first_manager(self) -> Host:
        return self.managers[0]

    @property
    def zones(self) -> dict[str, str]:
        """Host name -> zone, for the hosts whose labels name one."""
        return {h.name: h.labels[ZONE_LABEL] for h in self.hosts if h.labels.get(ZONE_LABEL)}

    def host(self, name: str) -> Host:
        for candidate in self.hosts:
            if candidate.name == name:
                return candidate
        raise KeyError(name)


FIELD_HINTS = {
    "name": "a short host name: letters, digits, '.', '_' or '-'",
    "endpoint": "ssh://user@host[:port], tcp://host:2376 with a tls: block, or unix:///path/to/docker.sock",
    "address": "the IP address or DNS name other hosts and clients reach this host on, e.g. 10.0.1.11",
    "role": "role: manager or role: worker",
    "insecure": "insecure: true or false",
    "labels": "labels: a mapping of names to string values, e.g. {zone: a}",
    "tls": "tls: {ca: PATH, cert: PATH, key: PATH}, paths relative to the inventory file",
    "ssh_config": "ssh_config: PATH of an ssh_config file for the ssh:// hosts, relative to the inventory file",
    "ssh_persist": "ssh_persist: SECONDS an idle SSH connection is kept for the next command (0: closed with each command)",
    "stack": "stack: {engine: apache|tansu, image: IMAGE, security: sasl_ssl|ssl|plaintext, topics: [...]}; see docs/inventory.md",
}


class _Where:
    """Builds the one-line errors: ``FILE: host 'NAME': field 'FIELD': what is wrong``, and a hint."""

    def __init__(self, path: str, host: str = "", field_name: str = "") -> None:
        self.path, self.host, self.field = path, host, field_name

    def at(self, field_name: str) -> _Where:
        return _Where(self.path, self.host, field_name)

    def error(self, problem: str, hint: str = "") -> InventoryError:
        parts = [self.path]
        if self.host:
            parts.append(f"host {self.host}" if self.host.startswith("#") else f"host '{self.host}'")
        if self.field:
            parts.append(f"field '{self.field}'")
        parts.append(problem)
        default = FIELD_HINTS.get(self.field.split(".")[0], "see the inventory format in docs/inventory.md")
        return InventoryError(": ".join(parts), hint=hint or default)

    def checked(self, check: Callable[..., T], *args: Any) -> T:
        """One of swarmkit's own checks (``swarmkit.names``); a refusal is this place's error, with the check's hint."""
        try:
            return check(*args)
        except SpecError as error:
            raise self.error(error.message, hint=error.hint) from None


INVENTORY_ENV = "SWARMKIT_INVENTORY"
DEFAULT_INVENTORIES = ("swarmkit.yaml", "swarmkit-sandbox.yaml")  # looked for in the current directory, in order


def find_inventory(given: str | None, directory: Path) -> str:
    """The inventory a command reads: the one given (``-i``, else ``$SWARMKIT_INVENTORY``), else the first of
    ``DEFAULT_INVENTORIES`` in ``directory``; none: bad input saying the three ways to name one."""
    if given is not None:
        return given
    for name in DEFAULT_INVENTORIES:
        if (directory / name).is_file():
            return name
    raise InventoryError(
        f"no inventory: no -i, no {INVENTORY_ENV}, and neither {' nor '.join(DEFAULT_INVENTORIES)} in {directory}",
        hint=f"pass -i PATH, set {INVENTORY_ENV}=PATH, or name the file {DEFAULT_INVENTORIES[0]} here",
    )


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file; contacts nothing."""
    shown = str(path)
    where = _Where(shown)
    if not shown:
        raise InventoryError("-i '': no inventory named", hint="pass -i PATH, e.g. the file `swarmkit sandbox up` writes")
    try:
        document = files.load_yaml(files.read_text(Path(path)))
    except FileNotFoundError:
        raise where.error("no such file", hint="create one with `swarmkit sandbox up`, or pass -i PATH") from None
    except files.FileProblem as problem:
        raise where.error(str(problem)) from None
    return parse_inventory(document, shown, base_dir=Path(path).resolve().parent)


def parse_inventory(document: object, path: str = "inventory", base_dir: Path | None = None) -> Inventory:
    """Validate an already-parsed YAML document (``path`` only labels the errors)."""
    where = _Where(path)
    if not isinstance(document, dict):
        raise where.error("must be a YAML mapping with a 'hosts' list", hint="see the file `swarmkit sandbox up` writes")
    _reject_unknown(document, TOP_FIELDS, where)
    allow_even = document.get("allow_even_managers", False)
    if not isinstance(allow_even, bool):
        raise where.at("allow_even_managers").error(f"{allow_even!r} is not true or false")
    raw_hosts = document.get("hosts")
    if not isinstance(raw_hosts, list) or not raw_hosts:
        raise where.at("hosts").error("must be a non-empty list of hosts")
    hosts = tuple(_parse_host(raw, index, where, base_dir or Path.cwd()) for index, raw in enumerate(raw_hosts, 1))
    _check_unique(hosts, where)
    _check_managers(hosts, allow_even, where)
    return Inventory(
        hosts=hosts,
        path=path,
        stack=_parse_stack(document.get("stack", {}), where),
        allow_even_managers=allow_even,
        ssh_config=_parse_ssh_config(document.get("ssh_config"), where.at("ssh_config"), base_dir or Path.cwd()),
        ssh_persist=_parse_seconds(document.get("ssh_persist"), where.at("ssh_persist")),
        metrics=parse_metrics(
            document.get("metrics"), base_dir or Path.cwd(), lambda at, problem: where.at(at).error(problem, METRICS_HINT)
        ),
    )


def _reject_unknown(mapping: dict, known: tuple[str, ...], where: _Where, prefix: str = "") -> None:
    """A misspelt key (``adress``) is an error, not a silently ignored setting."""
    for key in mapping:
        if key not in known:
            raise where.at(f"{prefix}{key}").error(f"unknown field (known: {', '.join(known)})")


def _parse_stack(raw: object, where: _Where) -> StackDefaults:
    where = where.at("stack")
    if raw is None:
        return StackDefaults()
    if not isinstance(raw, dict):
        raise where.error("must be a mapping (engine, image, security, topics, ...)")
    _reject_unknown(raw, STACK_FIELDS, where, prefix="stack.")
    values: dict = {"given": tuple(raw)}
    for key in TEXT_STACK_FIELDS:
        if key in raw:
            value = raw[key]
            if not isinstance(value, str):
                raise where.at(f"stack.{key}").error(f"{value!r} is not a string")
            values[key] = where.at(f"stack.{key}").checked(names.text, value, key)
    if not names.KAFKA_VERSION.fullmatch(values.get("kafka_version", "0.0.0")):
        raise where.at("stack.kafka_version").error(f"{values['kafka_version']!r} is not a Kafka version X.Y.Z (e.g. 4.4.0)")
    if "ports" in raw:
        values["internal_port"], values["external_port"] = _parse_ports(raw["ports"], where.at("stack.ports"))
    if "topics" in raw:
        values["topics"] = _parse_topics(raw["topics"], where.at("stack.topics"))
    if "users" in raw:
        values["users"] = _parse_users(raw["users"], where.at("stack.users"))
    if "quotas" in raw:
        values["quotas"] = _parse_quotas(raw["quotas"], where.at("stack.quotas"))
    if "broker_env" in raw:
        env = _text_mapping(raw["broker_env"], where.at("stack.broker_env"))
        values["broker_env"] = tuple((where.checked(names.env_name, key), value) for key, value in env.items())
    return StackDefaults(**values)


def _parse_ports(raw: object, where: _Where) -> tuple[int | None, int | None]:
    if not isinstance(raw, dict):
        raise where.error("must be a mapping {internal: PORT, external: PORT}")
    _reject_unknown(raw, PORT_FIELDS, where, prefix="stack.ports.")
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise where.error(f"{key}: {value!r} is not a port number from 1 to 65535")
    return raw.get("internal"), raw.get("external")


def _text_mapping(raw: object, where: _Where) -> dict[str, str]:
    """Names to values; YAML numbers and booleans become the text Kafka reads (86400000, true)."""
    if not isinstance(raw, dict):
        raise where.error("must be a mapping of names to values")
    found = {}
    for key, value in raw.items():
        if not isinstance(key, str) or isinstance(value, (dict, list)) or value is None:
            raise where.error(f"{key!r}: {value!r} is not a name and a plain value")
        found[key] = where.checked(names.text, str(value).lower() if isinstance(value, bool) else str(value), key)
    return found


def _parse_topic(raw: object, index: int, where: _Where) -> DeclaredTopic:
    if not isinstance(raw, dict):
        raise where.error(f"#{index}: must be a mapping {{name, partitions, replicas, configs}}")
    _reject_unknown(raw, TOPIC_FIELDS, where, prefix="stack.topics.")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise where.error(f"#{index}: name {name!r} is not a topic name")
    counts = []
    for label in ("partitions", "replicas"):
        count = raw.get(label)
        if isinstance(count, bool) or not isinstance(count, int):
            raise where.error(f"topic '{name}': {label} {count!r} is not a whole number")
        counts.append(count)
    configs = _text_mapping(raw.get("configs") or {}, where)
    return DeclaredTopic(name, counts[0], counts[1], tuple(configs.items()))


def _parse_topics(raw: object, where: _Where) -> tuple[DeclaredTopic, ...]:
    if not isinstance(raw, list):
        raise where.error("must be a list of {name, partitions, replicas, configs}")
    return tuple(_parse_topic(item, index, where) for index, item in enumerate(raw, 1))


def _parse_users(raw: object, where: _Where) -> tuple[DeclaredUser, ...]:
    """``{NAME: [SPEC, ...]}``; a user with no grants maps to an empty list (or nothing)."""
    if not isinstance(raw, dict):
        raise where.error("must be a mapping of user names to lists of grants, e.g. {orders-app: ['topic:orders:read,write']}")
    users = []
    for name, allow in raw.items():
        if not isinstance(name, str):
            raise where.error(f"{name!r} is not a user name: use 1-64 letters, digits, '.', '_' and '-'")
        where.checked(names.user_name, name)
        allow = [] if allow is None else allow
        if not isinstance(allow, list) or not all(isinstance(spec, str) for spec in allow):
            raise where.error(f"user '{name}': {allow!r} is not a list of grants like 'topic:orders:read,write'")
        users.append(DeclaredUser(name, tuple(allow)))
    return tuple(users)


def _quota_rate(key: str, value: object, where: _Where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise where.error(f"{key}: {value!r} is not a number above 0", hint=QUOTA_HINT)
    if key != "request_percentage" and not float(value).is_integer():
        raise where.error(f"{key}: {value!r} is not a whole number of bytes per second", hint=QUOTA_HINT)
    if key == "request_percentage" and value > MAX_REQUEST_PERCENTAGE:
        raise where.error(f"{key}: {value!r} is above {MAX_REQUEST_PERCENTAGE}", hint=QUOTA_HINT)
    return float(value)


def _parse_quota(raw: object, index: int, where: _Where) -> DeclaredQuota:
    if not isinstance(raw, dict):
        raise where.error(f"#{index}: must be a mapping {{user, client_id, {', '.join(QUOTA_RATES)}}}", hint=QUOTA_HINT)
    where = where.at(f"stack.quotas.#{index}")
    for key in raw:
        if key not in QUOTA_ENTITIES + QUOTA_RATES:
            raise where.error(f"unknown field {key!r} (known: {', '.join(QUOTA_ENTITIES + QUOTA_RATES)})", hint=QUOTA_HINT)
    names_given = {}
    for key in QUOTA_ENTITIES:
        value = raw.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise where.error(f"{key}: {value!r} is not a name", hint=QUOTA_HINT)
        names_given[key] = where.checked(names.text, value or "", key)
    if not any(names_given.values()):
        raise where.error("names neither a user nor a client_id", hint=QUOTA_HINT)
    rates = tuple((key, _quota_rate(key, raw[key], where)) for key in QUOTA_RATES if key in raw)
    if not rates:
        raise where.error(f"sets no quota ({', '.join(QUOTA_RATES)})", hint=QUOTA_HINT)
    return DeclaredQuota(names_given["user"], names_given["client_id"], rates)


def _parse_quotas(raw: object, where: _Where) -> tuple[DeclaredQuota, ...]:
    """A list of ``{user and/or client_id, rates}``; one entry per client (a second one for it is an error)."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise where.error("must be a list of {user, client_id, producer_byte_rate, ...}", hint=QUOTA_HINT)
    quotas = tuple(_parse_quota(item, index, where) for index, item in enumerate(raw, 1))
    seen: set[tuple[tuple[str, str], ...]] = set()
    for index, quota in enumerate(quotas, 1):
        if quota.entity in seen:
            who = " and ".join(f"{kind} {name}" for kind, name in quota.entity)
            raise where.error(f"#{index}: {who} has quotas twice", hint="give each client one entry with all its rates")
        seen.add(quota.entity)
    return quotas


def _parse_host(raw: object, index: int, top: _Where, base_dir: Path) -> Host:
    where = _Where(top.path, f"#{index}")
    if not isinstance(raw, dict):
        raise where.error("must be a mapping with name, endpoint, address and role")
    given = raw.get("name")
    if isinstance(given, str) and names.HOST_NAME.fullmatch(given):
        where = _Where(top.path, given)
    _reject_unknown(raw, HOST_FIELDS, where)
    for key in REQUIRED_HOST_FIELDS:
        if raw.get(key) in (None, ""):
            raise where.at(key).error("is missing")
    for key in ("name", "endpoint", "address", "role"):
        if key in raw and not isinstance(raw[key], str):
            raise where.at(key).error(f"{raw[key]!r} is not a string")
    name: str = raw["name"]
    where.at("name").checked(names.host_name, name)
    role = raw.get("role", NodeRole.WORKER)
    if role not in ROLES:
        raise where.at("role").error(f"unknown role {names.shown(role)} (known: {', '.join(ROLES)})")
    address = raw["address"]
    if not _is_address(address):
        raise where.at("address").error(f"{names.shown(address)} is not an IP address or host name")
    insecure = raw.get("insecure", False)
    if not isinstance(insecure, bool):
        raise where.at("insecure").error(f"{insecure!r} is not true or false")
    tls = _parse_tls(raw["tls"], where.at("tls"), base_dir) if "tls" in raw else None
    _check_endpoint(where.at("endpoint").checked(names.text, raw["endpoint"], "endpoint"), insecure, tls, where.at("endpoint"))
    return Host(
        name=name,
        endpoint=raw["endpoint"],
        address=address,
        role=NodeRole(role),
        labels=_parse_labels(raw.get("labels"), where.at("labels")),
        insecure=insecure,
        tls=tls,
    )


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    return names.dns_name(text)


def _is_loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_endpoint(endpoint: str, insecure: bool, tls: TlsFiles | None, where: _Where) -> None:
    """Only the forms the Docker CLI accepts, and no plain-text TCP across a network by accident."""
    wrong = where.error(f"{names.shown(endpoint)} is not one of {ENDPOINT_FORMS}")
    bad_port = where.error(
        f"{names.shown(endpoint)}: its port is not a number from 1 to 65535", hint="e.g. tcp://HOST:2376, ssh://USER@HOST:22"
    )
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError as error:
        raise (bad_port if str(error).startswith("Port") else wrong) from None
    if port == 0:
        raise bad_port
    if parts.scheme == "unix":
        if parts.netloc or not parts.path.startswith("/") or len(parts.path) < 2:
            raise wrong
        return
    if parts.scheme not in ("ssh", "tcp") or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise wrong
    if parts.scheme == "ssh":
        if not parts.username or parts.password:
            raise wrong
        return
    if parts.username or port is None:
        raise wrong
    if tls is None and not insecure and not _is_loopback(parts.hostname):
        raise where.error(
            f"'{endpoint}' is plain-text TCP to another machine (anyone on the network could control that engine)",
            hint="add tls: {ca, cert, key} (port 2376), use ssh://user@host, or set insecure: true on this host",
        )


def _parse_tls(raw: object, where: _Where, base_dir: Path) -> TlsFiles:
    if not isinstance(raw, dict):
        raise where.error("must be a mapping with ca, cert and key")
    _reject_unknown(raw, TLS_FIELDS, where, prefix="tls.")
    return TlsFiles(**{key: _existing_file(raw.get(key), where.at(f"tls.{key}"), base_dir) for key in TLS_FIELDS})


def _existing_file(value: object, where: _Where, base_dir: Path) -> str:
    """A path from the inventory, resolved against the inventory's directory; the file must exist."""
    if not isinstance(value, str) or not value:
        raise where.error("is missing" if value in (None, "") else f"{value!r} is not a path")
    where.checked(names.text, value, "path")
    resolved = base_dir / Path(value).expanduser()
    if not resolved.is_file():
        what = "a directory, not a file" if resolved.is_dir() else "not a regular file" if resolved.exists() else "no such file"
        raise where.error(f"{what}: {resolved}")
    return str(resolved)


def _parse_ssh_config(raw: object, where: _Where, base_dir: Path) -> str:
    return "" if raw is None else _existing_file(raw, where, base_dir)


def _parse_seconds(raw: object, where: _Where) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise where.error(f"{raw!r} is not a whole number of seconds (0 or more)")
    return raw


def _parse_labels(raw: object, where: _Where) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise where.error("must be a mapping of label names to string values")
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise where.error(
                f"{key!r}: {value!r} is not a string label", hint="quote values that YAML reads as numbers or booleans"
            )
        where.checked(names.label, key, value)
    zone = raw.get(ZONE_LABEL)
    if zone is not None:
        where.checked(names.zone_name, zone)
    return dict(raw)


def _address_key(address: str) -> str:
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return address.lower().rstrip(".")


def _check_unique(hosts: tuple[Host, ...], where: _Where) -> None:
    """Two entries for one name, address or engine would make two brokers fight over one server."""
    seen: dict[tuple[str, str], str] = {}
    for index, host in enumerate(hosts, 1):
        for key, value in (("name", host.name.lower()), ("address", _address_key(host.address)), ("endpoint", host.endpoint)):
            if (key, value) in seen:
                label = host.name if key != "name" else f"#{index}"
                raise _Where(where.path, label, key).error(f"'{getattr(host, key)}' is already used by host '{seen[key, value]}'")
            seen[key, value] = host.name


def _check_managers(hosts: tuple[Host, ...], allow_even: bool, where: _Where) -> None:
    managers = [h.name for h in hosts if h.is_manager]
    if not managers:
        raise where.at("role").error("no host is a manager", hint="give one host (or 3, 5...) role: manager")
    if len(managers) > 1 and len(managers) % 2 == 0 and not allow_even:
        raise where.at("role").error(
            f"{len(managers)} managers ({', '.join(managers)}): an even number adds no fault tolerance over {len(managers) - 1}",
            hint="use an odd number of managers, or set allow_even_managers: true at the top of the inventory",
        )


def check_rack(inventory: Inventory, rack: str) -> str:
    """A client's zone must be one the inventory's hosts declare (else it would fetch from no nearer replica)."""
    zones = sorted(set(inventory.zones.values()))
    if rack not in zones:
        known = f"the inventory's zones are {', '.join(zones)}" if zones else "no host of the inventory has labels: {zone: ...}"
        raise InventoryError(f"--rack {rack}: no such zone", hint=known)
    return rack
