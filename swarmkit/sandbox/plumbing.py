"""The sandbox's network plumbing on this machine: a bridge, a namespace and a veth per host, iptables rules
(the bridge's FORWARD rule, a simulated firewall's drops) and the hosts' names in /etc/hosts.  Each piece is
named after the sandbox (swarmkit.sandbox.state), so `down` removes it by its name.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import replace
from pathlib import Path

from swarmkit.errors import SpecError
from swarmkit.sandbox import state
from swarmkit.sandbox.state import FirewallRule, Sandbox, SandboxHost
from swarmkit.sandbox.system import in_netns as _in_netns
from swarmkit.sandbox.system import run as _run

HOSTS_FILE = Path("/etc/hosts")
PORT_PATTERN = re.compile(r"([0-9]{1,5})/(tcp|udp)")


def _hosts_block_markers(name: str) -> tuple[str, str]:
    return f"# BEGIN swarmkit sandbox {name}", f"# END swarmkit sandbox {name}"


def names_in_hosts_file() -> set[str]:
    names: set[str] = set()
    for line in HOSTS_FILE.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        names.update(fields[1:])
    return names


def create_bridge(sandbox: Sandbox) -> None:
    network = ipaddress.ip_network(sandbox.subnet)
    _run("ip", "link", "add", sandbox.bridge, "type", "bridge")
    _run("ip", "addr", "add", f"{sandbox.gateway}/{network.prefixlen}", "dev", sandbox.bridge)
    _run("ip", "link", "set", sandbox.bridge, "up")
    _run("iptables", "-I", "FORWARD", "-i", sandbox.bridge, "-o", sandbox.bridge, "-j", "ACCEPT")


def create_host_network(sandbox: Sandbox, host: SandboxHost) -> None:
    prefixlen = ipaddress.ip_network(sandbox.subnet).prefixlen
    _run("ip", "netns", "add", host.netns)
    _run("ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
    _run("ip", "link", "set", host.veth, "master", sandbox.bridge, "up")
    _in_netns(host.netns, "ip", "addr", "add", f"{host.address}/{prefixlen}", "dev", "eth0")
    _in_netns(host.netns, "ip", "link", "set", "eth0", "up")
    _in_netns(host.netns, "ip", "link", "set", "lo", "up")


def write_hosts_entries(sandbox: Sandbox) -> None:
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


def _parse_port(text: str) -> tuple[int, str]:
    match = PORT_PATTERN.fullmatch(text.lower())
    if not match or not 1 <= int(match.group(1)) <= 65535:
        raise SpecError(f"'{text}' is not PORT/PROTO", hint="e.g. 9094/tcp or 4789/udp")
    return int(match.group(1)), match.group(2)


def _firewall_match(rule: FirewallRule) -> list[str]:
    return ["-p", rule.protocol, "--dport", str(rule.port), "-j", "DROP"]


def firewall(name: str, host_name: str, port_spec: str, block: bool) -> Sandbox:
    """Simulate a host firewall dropping one port inbound on one host."""
    sandbox = state.load(name)
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
    state.save(sandbox)
    return sandbox


def remove_stale_vxlan_links(host: SandboxHost) -> None:
    """After an unclean stop a restarted engine fails overlay tasks on a leftover vx-* link."""
    links = _in_netns(host.netns, "ip", "-o", "link", "show", check=False).stdout
    for line in links.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith("vx-"):
            _in_netns(host.netns, "ip", "link", "del", link, check=False)


def remove_links(name: str) -> list[str]:
    """The sandbox's namespaces, veths, bridge and FORWARD rule, found by their names (also after a crash)."""
    removed = []
    for netns in _run("ip", "netns", "list").stdout.split("\n"):
        netns = netns.split(" ")[0]
        if netns.startswith(state.netns_prefix(name)):
            _run("ip", "netns", "del", netns, check=False)
            removed.append(f"namespace {netns}")
    bridge = state.bridge_name(name)
    for line in _run("ip", "-o", "link", "show").stdout.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith(f"skv-{name}-"):
            _run("ip", "link", "del", link, check=False)
    if _run("ip", "link", "del", bridge, check=False).returncode == 0:
        removed.append(f"bridge {bridge}")
    while _run("iptables", "-D", "FORWARD", "-i", bridge, "-o", bridge, "-j", "ACCEPT", check=False).returncode == 0:
        removed.append("iptables FORWARD rule")
    return removed


def remove_hosts_entries(name: str) -> list[str]:
    """The sandbox's block in /etc/hosts, if it has one."""
    begin, end = _hosts_block_markers(name)
    text = HOSTS_FILE.read_text()
    if begin not in text:
        return []
    HOSTS_FILE.write_text(_without_block(text, begin, end))
    return [f"{HOSTS_FILE} entries"]
