"""A real server group on one Linux machine: one network namespace, hostname and dockerd per host.

Everything the sandbox creates is named after it (bridge, namespaces, veths, state directory), so
`down` can find and remove it even when `up` crashed halfway and left no state file.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import yaml

from swarmkit import names, waits
from swarmkit.defaults import DEFAULT_ENGINE, SANDBOX_MANAGERS, EngineName
from swarmkit.errors import SandboxError, SpecError, SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.hosts.inventory import TlsFiles
from swarmkit.images import image, maven
from swarmkit.sandbox import disks, sshd
from swarmkit.sandbox.system import in_netns as _in_netns
from swarmkit.sandbox.system import run as _run
from swarmkit.sandbox.system import spawn_in_host
from swarmkit.sandbox.system import wait_for as _wait_for
from swarmkit.stack.engines import ENGINES, BrokerEngine
from swarmkit.waits import answers_ok

STATE_ROOT = Path(os.environ.get("SWARMKIT_STATE_DIR", "/var/tmp/swarmkit")) / "sandbox"
HOSTS_FILE = Path("/etc/hosts")
REGISTRY_PORT = 5000
TLS_PORT = 2376  # where a real server's dockerd listens for TLS-verified clients
ENGINE_START_TIMEOUT = 60.0
REQUIRED_COMMANDS = ("ip", "iptables", "nsenter", "unshare", "dockerd", "docker-registry", "ldd")
KERNEL_MODULES = ("bridge", "vxlan")
PORT_PATTERN = re.compile(r"([0-9]{1,5})/(tcp|udp)")
MAX_NODES = 20
ENDPOINTS = ("unix", "ssh")

Report = Callable[[str], None]  # one progress line


def _quiet(message: str) -> None:
    """No progress lines (a caller that shows none)."""


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


def bridge_name(name: str) -> str:
    return f"skb-{name}"


def _netns_prefix(name: str) -> str:
    return f"swk-{name}-"


def _directory(name: str) -> Path:
    """The sandbox's own directory under the sandbox root (a checked name: never the root or outside it)."""
    return STATE_ROOT / names.sandbox_name(name)


def _state_file(name: str) -> Path:
    return _directory(name) / "sandbox.json"


def _hosts_block_markers(name: str) -> tuple[str, str]:
    return f"# BEGIN swarmkit sandbox {name}", f"# END swarmkit sandbox {name}"


# --- small system helpers -------------------------------------------------------------------


def _save(sandbox: Sandbox) -> None:
    sandbox.directory.mkdir(parents=True, exist_ok=True)
    data = asdict(sandbox)
    _state_file(sandbox.name).write_text(json.dumps(data, indent=2))


def load(name: str) -> Sandbox:
    path = _state_file(name)
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


# --- validation (nothing is created before these pass) --------------------------------------


def check_prerequisites() -> None:
    """Root, commands and kernel features: fail before anything is created."""
    if os.geteuid() != 0:
        raise SandboxError(
            "the sandbox needs root (network namespaces, a bridge, iptables, dockerd)",
            hint="run it as root, e.g. sudo .venv/bin/swarmkit sandbox up",
        )
    missing = [c for c in REQUIRED_COMMANDS if shutil.which(c) is None]
    if missing:
        raise SandboxError(f"missing commands: {', '.join(missing)}", hint="run scripts/setup.sh")
    if not Path("/proc/self/ns/net").exists():
        raise SandboxError("this kernel has no network namespaces", hint="the sandbox needs CONFIG_NET_NS")
    for module in KERNEL_MODULES:
        if not Path("/sys/module", module).exists():
            raise SandboxError(
                f"kernel feature '{module}' is not available",
                hint=f"load the '{module}' kernel module on this machine (modprobe {module})",
            )
    if "overlay" not in Path("/proc/filesystems").read_text():
        raise SandboxError("the kernel has no overlay filesystem (needed by dockerd)", hint="modprobe overlay")


def _check_new_sandbox(name: str, nodes: int, prefix: str, subnet: str, engine: str, endpoint: str = "unix") -> None:
    if engine not in ENGINES:
        raise SpecError(f"unknown engine '{engine}'", hint=f"use one of {', '.join(ENGINES)}")
    if endpoint not in ENDPOINTS:
        raise SpecError(f"unknown endpoint kind '{endpoint}'", hint=f"use one of {', '.join(ENDPOINTS)}")
    names.sandbox_name(name)
    names.sandbox_prefix(prefix)
    if not 1 <= nodes <= MAX_NODES:
        raise SpecError(f"--nodes {nodes} is out of range", hint=f"a sandbox has 1 to {MAX_NODES} hosts")
    if endpoint == "ssh":
        _check_ssh_prerequisites(name)
    try:
        network = ipaddress.ip_network(subnet)
    except ValueError as error:
        raise SpecError(f"subnet '{subnet}' is invalid: {error}", hint="e.g. 10.231.0.0/24") from error
    if network.prefixlen > 26 or not network.is_private:
        raise SpecError(f"subnet {subnet} must be a private network of /26 or larger", hint="e.g. 10.231.0.0/24")
    if _state_file(name).exists() or (STATE_ROOT / name).exists():
        raise SandboxError(
            f"sandbox '{name}' already exists (or a failed one left state behind)",
            hint=f"remove it with: swarmkit sandbox down --name {name}",
        )
    if _run("ip", "link", "show", bridge_name(name), check=False).returncode == 0:
        raise SandboxError(f"bridge {bridge_name(name)} already exists", hint=f"swarmkit sandbox down --name {name}")
    routes = _run("ip", "-4", "route", "show").stdout
    for line in routes.splitlines():
        destination = line.split()[0]
        if destination != "default" and ipaddress.ip_network(destination, strict=False).overlaps(network):
            raise SandboxError(
                f"subnet {subnet} is already in use on this machine ({line.strip()})", hint="pick another --subnet"
            )
    taken = _names_in_hosts_file()
    clashes = sorted({f"{prefix}{i}" for i in range(1, nodes + 1)} & taken)
    if clashes:
        raise SandboxError(
            f"host names {', '.join(clashes)} are already in {HOSTS_FILE}",
            hint="another sandbox uses them: pick another --prefix, or take that sandbox down",
        )


def _check_ssh_prerequisites(name: str) -> None:
    missing = [c for c in sshd.COMMANDS if shutil.which(c) is None]
    if missing:
        raise SandboxError(f"--endpoint ssh needs {', '.join(missing)}", hint="run scripts/setup.sh (openssh-server)")
    sshd.check_new(name)


def _names_in_hosts_file() -> set[str]:
    names: set[str] = set()
    for line in HOSTS_FILE.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        names.update(fields[1:])
    return names


# --- creation -------------------------------------------------------------------------------


def _create_bridge(sandbox: Sandbox) -> None:
    network = ipaddress.ip_network(sandbox.subnet)
    _run("ip", "link", "add", sandbox.bridge, "type", "bridge")
    _run("ip", "addr", "add", f"{sandbox.gateway}/{network.prefixlen}", "dev", sandbox.bridge)
    _run("ip", "link", "set", sandbox.bridge, "up")
    _run("iptables", "-I", "FORWARD", "-i", sandbox.bridge, "-o", sandbox.bridge, "-j", "ACCEPT")


def _start_registry(sandbox: Sandbox) -> int:
    directory = sandbox.directory / "registry"
    directory.mkdir(parents=True, exist_ok=True)
    store = maven.cache_dir() / "sandbox-registry"  # shared: an image built for one sandbox serves the next
    store.mkdir(parents=True, exist_ok=True)
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(store)}},
        "http": {"addr": sandbox.registry},
    }
    (directory / "config.yml").write_text(yaml.safe_dump(config))
    with open(directory / "registry.log", "ab") as log:
        process = subprocess.Popen(
            ["docker-registry", "serve", str(directory / "config.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _wait_for(lambda: _registry_answers(sandbox.registry), 20, f"the registry at {sandbox.registry}")
    return process.pid


def _registry_answers(registry: str) -> bool:
    return answers_ok(f"http://{registry}/v2/")


def _new_host(sandbox: Sandbox, index: int) -> SandboxHost:
    network = ipaddress.ip_network(sandbox.subnet)
    name = f"{sandbox.prefix}{index}"
    return SandboxHost(
        name=name,
        index=index,
        address=str(network.network_address + 10 + index),
        netns=f"{_netns_prefix(sandbox.name)}{name}",
        veth=f"skv-{sandbox.name}-{index}",
        directory=str(sandbox.directory / name),
    )


def _create_host_network(sandbox: Sandbox, host: SandboxHost) -> None:
    prefixlen = ipaddress.ip_network(sandbox.subnet).prefixlen
    _run("ip", "netns", "add", host.netns)
    _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
    _run("ip", "link", "set", host.veth, "master", sandbox.bridge, "up")
    _in_netns(host.netns, "ip", "addr", "add", f"{host.address}/{prefixlen}", "dev", "eth0")
    _in_netns(host.netns, "ip", "link", "set", "eth0", "up")
    _in_netns(host.netns, "ip", "link", "set", "lo", "up")


def _start_engine(sandbox: Sandbox, host: SandboxHost, tls: TlsFiles | None = None) -> int:
    """dockerd in the host's network namespace with its own hostname and a private /run.

    With ``tls`` (the engine's CA for clients, its certificate and key) it also listens on
    tcp://ADDRESS:2376 and accepts only clients with a certificate from that CA, as a real server.
    A sandbox reached over SSH gives the socket to the host's own docker group (see sshd.py).
    """
    directory = Path(host.directory)
    directory.mkdir(parents=True, exist_ok=True)
    if sandbox.data_limit:  # before dockerd: its mount namespace is a copy of this one
        disks.mount(host.directory, sandbox.data_limit)
    script = (
        f"exec dockerd --data-root {directory}/data --exec-root {directory}/exec"
        f" -H unix://{directory}/docker.sock --pidfile {directory}/docker.pid"
        f" --insecure-registry {sandbox.registry}"
    )
    if tls is not None:
        script += f" -H tcp://{host.address}:{TLS_PORT} --tlsverify --tlscacert {tls.ca} --tlscert {tls.cert} --tlskey {tls.key}"
    if sandbox.endpoint == "ssh":
        script += f" --group {sshd.group_name(sandbox.name, host.name)}"
    return spawn_in_host(host.netns, host.name, script, directory / "dockerd.log")


def _bring_up_hosts(sandbox: Sandbox, hosts: list[SandboxHost], report: Report = _quiet) -> list[SandboxHost]:
    """Networks one by one (cheap), engines in parallel (the slow part)."""
    started = []
    for host in hosts:
        _create_host_network(sandbox, host)
        report(f"{host.name}: engine starting")
        if sandbox.endpoint == "ssh":
            sshd.add_host_group(sandbox.name, host.name)
        started.append(replace(host, pid=_start_engine(sandbox, host)))
        _save(replace(sandbox, hosts=sandbox.hosts + tuple(started)))
    fan_out(_wait_engine, started)
    if sandbox.data_limit:
        fan_out(lambda h: disks.create_volume(h.docker, h.directory), started)
    report(f"engines ready on {', '.join(h.name for h in started)}")
    if sandbox.endpoint == "ssh":
        started = fan_out(lambda h: replace(h, sshd_pid=sshd.start_server(sandbox.name, h)), started)
    return started


def _wait_engine(host: SandboxHost) -> None:
    try:
        dockerapi.wait_until_ready(host.docker, ENGINE_START_TIMEOUT)
    except SandboxError:
        raise
    except Exception as error:
        log = Path(host.directory) / "dockerd.log"
        raise SandboxError(f"the engine of {host.name} did not start: {error}", hint=f"see {log}") from error


def _write_hosts_entries(sandbox: Sandbox) -> None:
    """Managed /etc/hosts block: clients on this machine resolve the hosts' names as on a LAN."""
    begin, end = _hosts_block_markers(sandbox.name)
    kept = _without_block(HOSTS_FILE.read_text(), begin, end)
    block = [begin, *(f"{h.address}\t{h.name}" for h in sandbox.hosts), end]
    HOSTS_FILE.write_text(kept.rstrip("\n") + "\n" + "\n".join(block) + "\n")


def _without_block(text: str, begin: str, end: str) -> str:
    lines, inside = [], False
    for line in text.splitlines():
        if line == begin:
            inside = True
        elif line == end:
            inside = False
        elif not inside:
            lines.append(line)
    return "\n".join(lines) + "\n"


def inventory_document(sandbox: Sandbox) -> dict:
    ssh = {"ssh_config": str(sshd.client_config(sandbox.directory))} if sandbox.endpoint == "ssh" else {}
    return {
        **ssh,
        "stack": {
            "engine": sandbox.engine.value,
            "image": sandbox.images.get(sandbox.engine, ""),
            "probe_image": sandbox.images.get("probe", ""),
            **({"kafka_version": sandbox.kafka_version} if _engine(sandbox).KAFKA_VERSIONED else {}),
        },
        "hosts": [
            {
                "name": h.name,
                "endpoint": sandbox.inventory_endpoint(h),
                "address": h.address,
                "role": "manager" if h.index <= sandbox.managers else "worker",
            }
            for h in sandbox.hosts
        ],
    }


def _write_inventory(sandbox: Sandbox) -> None:
    if sandbox.endpoint == "ssh":
        sshd.write_client_files(sandbox.name, sandbox.directory, sandbox.hosts)
    header = (
        f"# Inventory of swarmkit sandbox '{sandbox.name}' ({len(sandbox.hosts)} hosts on bridge "
        f"{sandbox.bridge}, {sandbox.subnet}).\n# Written by `swarmkit sandbox`; the same format describes real servers.\n"
    )
    path = Path(sandbox.inventory_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + yaml.safe_dump(inventory_document(sandbox), sort_keys=False))


def _engine(sandbox: Sandbox) -> BrokerEngine:
    return ENGINES[sandbox.engine]


def publish_images(sandbox: Sandbox) -> Sandbox:
    """Build on the first host and push to the sandbox registry; the others pull as servers would."""
    builder = sandbox.hosts[0].docker
    recipe = image.kafka_recipe(sandbox.kafka_version) if _engine(sandbox).KAFKA_VERSIONED else image.tansu_recipe()
    images = {
        sandbox.engine: image.publish(builder, recipe, sandbox.registry),
        "probe": image.publish(builder, image.probe_recipe(), sandbox.registry),
    }
    updated = replace(sandbox, images=images)
    _save(updated)
    _write_inventory(updated)
    return updated


def up(
    nodes: int,
    name: str,
    prefix: str,
    subnet: str,
    inventory_path: str,
    engine: str = DEFAULT_ENGINE,
    managers: int = SANDBOX_MANAGERS,
    *,
    report: Report = _quiet,
    endpoint: str = "unix",
    data_limit: str = "",
    kafka_version: str = image.KAFKA_VERSION,
) -> Sandbox:
    """Hosts 1..``managers`` become swarm managers (apache runs one KRaft controller on each).

    ``endpoint="ssh"``: the inventory reaches the hosts over SSH, as a user of each host's docker group (sshd.py).
    ``data_limit`` (e.g. "256m"): each host's broker data disk has that size (disks.py), so it can fill up.
    Interrupted or failed half-way, it removes what it created (as `down` does): the next `up` starts clean."""
    check_prerequisites()
    _check_new_sandbox(name, nodes, prefix, subnet, engine, endpoint)
    if data_limit:
        disks.limit(data_limit)
    image.check_kafka_version(kafka_version)
    sandbox = Sandbox(
        name=name,
        subnet=subnet,
        prefix=prefix,
        inventory_path=str(Path(inventory_path).resolve()),
        engine=EngineName(engine),
        managers=max(1, min(managers, nodes)),
        endpoint=endpoint,
        data_limit=data_limit,
        kafka_version=kafka_version,
    )
    _save(sandbox)
    try:
        report(f"bridge {sandbox.bridge} and registry {sandbox.registry}")
        if endpoint == "ssh":
            sshd.create_user(name, sandbox.directory)
        _create_bridge(sandbox)
        sandbox = replace(sandbox, registry_pid=_start_registry(sandbox))
        _save(sandbox)
        hosts = _bring_up_hosts(sandbox, [_new_host(sandbox, i) for i in range(1, nodes + 1)], report)
        sandbox = replace(sandbox, hosts=tuple(hosts))
        _save(sandbox)
        _write_hosts_entries(sandbox)
        report(f"building and publishing the {engine} and probe images")
        return publish_images(sandbox)
    except BaseException:
        down(name)
        raise


def add_node(name: str) -> SandboxHost:
    sandbox = load(name)
    index = max((h.index for h in sandbox.hosts), default=0) + 1
    host = _new_host(sandbox, index)
    if host.name in _names_in_hosts_file():
        raise SandboxError(f"host name {host.name} is already in {HOSTS_FILE}", hint="take the other sandbox down")
    (added,) = _bring_up_hosts(sandbox, [host])
    sandbox = replace(sandbox, hosts=sandbox.hosts + (added,))
    _save(sandbox)
    _write_hosts_entries(sandbox)
    _write_inventory(sandbox)
    return added


# --- firewall simulation --------------------------------------------------------------------


def _parse_port(text: str) -> tuple[int, str]:
    match = PORT_PATTERN.fullmatch(text.lower())
    if not match or not 1 <= int(match.group(1)) <= 65535:
        raise SpecError(f"'{text}' is not PORT/PROTO", hint="e.g. 9094/tcp or 4789/udp")
    return int(match.group(1)), match.group(2)


def _firewall_match(rule: FirewallRule) -> list[str]:
    return ["-p", rule.protocol, "--dport", str(rule.port), "-j", "DROP"]


def firewall(name: str, host_name: str, port_spec: str, block: bool) -> Sandbox:
    """Simulate a host firewall dropping one port inbound on one host."""
    sandbox = load(name)
    host = sandbox.host(host_name)
    port, protocol = _parse_port(port_spec)
    rule = FirewallRule(host=host.name, port=port, protocol=protocol)
    # raw PREROUTING, not INPUT: host-mode published ports are DNAT'ed before INPUT sees them.
    if block and rule not in sandbox.firewall:
        _in_netns(host.netns, "iptables", "-t", "raw", "-I", "PREROUTING", *_firewall_match(rule))
        sandbox = replace(sandbox, firewall=sandbox.firewall + (rule,))
    elif not block and rule in sandbox.firewall:
        _in_netns(host.netns, "iptables", "-t", "raw", "-D", "PREROUTING", *_firewall_match(rule))
        sandbox = replace(sandbox, firewall=tuple(r for r in sandbox.firewall if r != rule))
    _save(sandbox)
    return sandbox


# --- engines on and off (for failure drills) ------------------------------------------------


def stop_engine(name: str, host_name: str) -> None:
    """Kill one host's dockerd (and its containers) as a crashed server would lose them."""
    sandbox = load(name)
    host = sandbox.host(host_name)
    _kill(_engine_processes(host))
    _remove_stale_vxlan_links(host)


def start_engine(name: str, host_name: str, tls: TlsFiles | None = None) -> SandboxHost:
    """Start a stopped host's dockerd again; ``tls`` adds the TLS-verified tcp listener of a real server."""
    sandbox = load(name)
    host = sandbox.host(host_name)
    if _engine_processes(host):
        raise SandboxError(f"the engine of {host.name} is already running", hint="stop it first")
    # A killed engine leaves pid files behind; a restarted dockerd would wait on the dead pids.
    for pid_file in ("docker.pid", "exec/containerd/containerd.pid"):
        (Path(host.directory) / pid_file).unlink(missing_ok=True)
    restarted = replace(host, pid=_start_engine(sandbox, host, tls))
    _wait_engine(restarted)
    _save(replace(sandbox, hosts=tuple(restarted if h.name == host.name else h for h in sandbox.hosts)))
    return restarted


def _remove_stale_vxlan_links(host: SandboxHost) -> None:
    """After an unclean stop a restarted engine fails overlay tasks on a leftover vx-* link."""
    links = _in_netns(host.netns, "ip", "-o", "link", "show", check=False).stdout
    for line in links.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith("vx-"):
            _in_netns(host.netns, "ip", "link", "del", link, check=False)


# --- teardown -------------------------------------------------------------------------------


def _all_processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) for every process on this machine."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry.name)] = (parent, cmdline)
    return table


def _processes_under(directory: str | Path) -> set[int]:
    """Processes this sandbox started (their command line names its directory) and their children.

    dockerd, its containerd, the shims and the registry all carry the directory in their
    arguments; container processes are children of the shims.  The directory is matched with its trailing
    slash: sandbox 'ir' (or host ir1) must not claim the processes of sandbox 'irx' (or host ir10).
    """
    marker = f"{str(directory).rstrip('/')}/"
    table = _all_processes()
    return _with_descendants(table, {pid for pid, (_, cmdline) in table.items() if marker in cmdline and pid != os.getpid()})


def _with_descendants(table: dict[int, tuple[int, str]], roots: set[int]) -> set[int]:
    found = set(roots)
    grew = True
    while grew:
        children = {pid for pid, (parent, _) in table.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return found


def _engine_processes(host: SandboxHost) -> set[int]:
    """The host's dockerd, containerd, shims and containers: not its sshd (a server's Docker can stop alone)."""
    sshd_tree = _with_descendants(_all_processes(), {host.sshd_pid}) if host.sshd_pid else set()
    return _processes_under(host.directory) - sshd_tree


def _kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = waits.Deadline(10, first=0.05, longest=0.5)
    while any(_alive(pid) for pid in pids) and not deadline.passed():
        deadline.sleep()


def _alive(pid: int) -> bool:
    """Running and not a zombie; reaps the zombie when it is our own child (engines we started)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _remove_directory(directory: Path) -> None:
    """Unmount what dockerd left mounted under the directory, then delete it."""
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for mountpoint in sorted((m for m in mounts if m.startswith(str(directory))), reverse=True):
        _run("umount", "-l", mountpoint, check=False)
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        raise SandboxError(f"could not remove {directory}", hint="something still uses it; see lsof +D")


def down(name: str) -> list[str]:
    """Remove everything the named sandbox created; safe to run after a crash or twice."""
    directory = _directory(name)
    check_prerequisites()
    removed = sshd.close_connections(directory)
    pids = _processes_under(directory)
    if pids:
        _kill(pids)
        removed.append(f"{len(pids)} processes")
    for netns in _run("ip", "netns", "list").stdout.split("\n"):
        netns = netns.split(" ")[0]
        if netns.startswith(_netns_prefix(name)):
            _run("ip", "netns", "del", netns, check=False)
            removed.append(f"namespace {netns}")
    bridge = bridge_name(name)
    for line in _run("ip", "-o", "link", "show").stdout.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith(f"skv-{name}-"):
            _run("ip", "link", "del", link, check=False)
    if _run("ip", "link", "del", bridge, check=False).returncode == 0:
        removed.append(f"bridge {bridge}")
    while _run("iptables", "-D", "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT", check=False).returncode == 0:
        removed.append("iptables FORWARD rule")
    removed += sshd.remove_accounts(name)
    begin, end = _hosts_block_markers(name)
    text = HOSTS_FILE.read_text()
    if begin in text:
        HOSTS_FILE.write_text(_without_block(text, begin, end))
        removed.append(f"{HOSTS_FILE} entries")
    if directory.exists():
        _remove_directory(directory)
        removed.append(f"directory {directory}")
    return removed


def status(name: str) -> SandboxStatus:
    if not _state_file(name).exists():
        return SandboxStatus(name=name, exists=False)
    sandbox = load(name)
    running = {pid for pid, _ in _all_processes().items()}

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
