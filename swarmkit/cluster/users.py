"""Client users of a sasl_ssl cluster and the configuration files clients connect with.

A user's password is made here, kept in the stack's store beside the inventory (``cluster.pki``)
and given to the cluster as a salted SCRAM-SHA-512 credential through the admin API, as swarmkit's
own admin.  Calls go through the first inventory host's published port; the CA is checked, the
host name is not (that host's certificate names what it advertises, which may not be its address).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from swarmkit.cluster import kafka, pki
from swarmkit.cluster.verify import state_path
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory
from swarmkit.stack.security import ADMIN_USER, ClientSecurity, settings_text

FORMATS = ("properties", "librdkafka")


def _admin(inventory: Inventory, stack_name: str, port: int) -> tuple[str, ClientSecurity]:
    security = pki.for_stack(inventory, stack_name, "sasl_ssl")
    assert security is not None
    return f"{inventory.hosts[0].address}:{port}", replace(security, verify_hostname=False)


def _client_user(name: str) -> str:
    if pki.check_user(name) == ADMIN_USER:
        raise SpecError(f"'{ADMIN_USER}' is swarmkit's own user", hint="give client users names of their own")
    return name


def add_user(inventory: Inventory, stack_name: str, name: str, port: int = 9094) -> None:
    """Create the user (or set its kept password again: adding twice changes nothing)."""
    store = pki.Pki(pki.store_dir(inventory, stack_name))
    password = store.password(_client_user(name)) or ""
    bootstrap, security = _admin(inventory, stack_name, port)
    kafka.set_scram_user(bootstrap, name, password, security)


def remove_user(inventory: Inventory, stack_name: str, name: str, port: int = 9094) -> None:
    bootstrap, security = _admin(inventory, stack_name, port)
    kafka.remove_scram_user(bootstrap, _client_user(name), security)
    pki.Pki(pki.store_dir(inventory, stack_name)).forget(name)


def list_users(inventory: Inventory, stack_name: str, port: int = 9094) -> list[str]:
    bootstrap, security = _admin(inventory, stack_name, port)
    return kafka.scram_users(bootstrap, security)


@dataclass(frozen=True)
class ClientConfig:
    text: str  # key=value lines
    ca_pem: str
    keystore_pem: str = ""  # ssl mode: the user's key and certificate


def _bootstrap_list(inventory: Inventory, stack_name: str, port: int) -> str:
    """What the last passing ``verify`` saw each broker advertise; else every host's name."""
    try:
        kept = json.loads(state_path(inventory, stack_name).read_text())["brokers"]
        return ",".join(sorted(kept.values()))
    except (OSError, ValueError, KeyError):
        return ",".join(f"{host.name}:{port}" for host in inventory.hosts)


def client_config(
    inventory: Inventory, stack_name: str, security: str, user: str, fmt: str, ca_file: str, port: int = 9094
) -> ClientConfig:
    """A ready client configuration for ``user``; files it names (``ca_file``) are the caller's to write."""
    if fmt not in FORMATS:
        raise SpecError(f"format '{fmt}' is unknown", hint=f"use one of {', '.join(FORMATS)}")
    client = pki.for_stack(inventory, stack_name, security, user)
    if client is None:
        raise SpecError(
            "the stack runs in plaintext: a client needs only bootstrap.servers", hint="deploy with --security sasl_ssl"
        )
    client = replace(client, ca_file=ca_file)
    keystore = str(Path(ca_file).with_name(f"{user}.pem")) if client.client else ""
    settings = {"bootstrap.servers": _bootstrap_list(inventory, stack_name, port)}
    settings |= client.file_settings(java=fmt == "properties", keystore_file=keystore)
    return ClientConfig(settings_text(settings), client.ca_pem, client.client.keystore if client.client else "")
