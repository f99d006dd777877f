"""What a sandbox needs before anything is created: root, commands, kernel features, and new options that
clash with nothing on this machine (names, subnet, routes, /etc/hosts).  Nothing is created before these pass.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
from pathlib import Path

from swarmkit import names
from swarmkit.errors import SandboxError, SpecError
from swarmkit.sandbox import plumbing, sshd, state
from swarmkit.sandbox.system import run as _run
from swarmkit.stack.engines import ENGINES

REQUIRED_COMMANDS = ("ip", "iptables", "nsenter", "unshare", "dockerd", "docker-registry", "ldd")
KERNEL_MODULES = ("bridge", "vxlan")
MAX_NODES = 20
ENDPOINTS = ("unix", "ssh")


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


def check_new_sandbox(name: str, nodes: int, prefix: str, subnet: str, engine: str, endpoint: str = "unix") -> None:
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
    if state.state_file(name).exists() or (state.STATE_ROOT / name).exists():
        raise SandboxError(
            f"sandbox '{name}' already exists (or a failed one left state behind)",
            hint=f"remove it with: swarmkit sandbox down --name {name}",
        )
    if _run("ip", "link", "show", state.bridge_name(name), check=False).returncode == 0:
        raise SandboxError(f"bridge {state.bridge_name(name)} already exists", hint=f"swarmkit sandbox down --name {name}")
    routes = _run("ip", "-4", "route", "show").stdout
    for line in routes.splitlines():
        destination = line.split()[0]
        if destination != "default" and ipaddress.ip_network(destination, strict=False).overlaps(network):
            raise SandboxError(
                f"subnet {subnet} is already in use on this machine ({line.strip()})", hint="pick another --subnet"
            )
    taken = plumbing.names_in_hosts_file()
    clashes = sorted({f"{prefix}{i}" for i in range(1, nodes + 1)} & taken)
    if clashes:
        raise SandboxError(
            f"host names {', '.join(clashes)} are already in {plumbing.HOSTS_FILE}",
            hint="another sandbox uses them: pick another --prefix, or take that sandbox down",
        )


def _check_ssh_prerequisites(name: str) -> None:
    missing = [c for c in sshd.COMMANDS if shutil.which(c) is None]
    if missing:
        raise SandboxError(f"--endpoint ssh needs {', '.join(missing)}", hint="run scripts/setup.sh (openssh-server)")
    sshd.check_new(name)
