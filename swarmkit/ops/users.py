"""Client users of a sasl_ssl cluster and the configuration files clients connect with.

A user's password is made here, kept in the stack's store beside the inventory (``security.pki``)
and given to the cluster as a salted SCRAM-SHA-512 credential through the admin API, as swarmkit's
own admin.  Calls go through the first inventory host's published port; the CA is checked, the
host name is not (that host's certificate names what it advertises, which may not be its address).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from swarmkit import names
from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.security import pki
from swarmkit.security.settings import ADMIN_USER, ClientSecurity, settings_text
from swarmkit.stack.deployed import SECURITY_LABEL, broker_service, verified_state_path

FORMATS = ("properties", "librdkafka")
SECURE_MODES = ("sasl_ssl", "ssl")


def deployed_security(session: Session, stack_name: str, wanted: tuple[str, ...]) -> str:
    """The mode the stack's broker service runs in, which must be one of ``wanted``: checked on the swarm before
    anything (a CA, a password file) is made for a stack that is not deployed, or not secured that way."""
    broker = broker_service(names.stack_name(stack_name))
    spec = dockerapi.service_spec(session.docker[session.inventory.first_manager], broker)
    if spec is None:
        raise SpecError(
            f"stack '{stack_name}' is not deployed (no service {broker}): nothing was written",
            hint="check --stack; deploy it first with: swarmkit deploy -i INVENTORY --security sasl_ssl",
        )
    mode = spec.labels.get(SECURITY_LABEL, "plaintext")
    if mode not in wanted:
        raise SpecError(
            f"stack '{stack_name}' runs in {mode}, not {' or '.join(wanted)}: nothing was written",
            hint="a plaintext client needs only bootstrap.servers" if mode == "plaintext" else f"use --security {mode}",
        )
    return mode


def check_security(security: str | None) -> tuple[str, ...]:
    """The modes ``--security`` allows (both secure ones when not given)."""
    if security is None:
        return SECURE_MODES
    if security not in SECURE_MODES:
        raise SpecError(f"--security '{security}' is not a client security mode", hint=f"use one of {', '.join(SECURE_MODES)}")
    return (security,)


def _admin(session: Session, stack_name: str, port: int) -> tuple[str, ClientSecurity]:
    """swarmkit's admin login to a deployed sasl_ssl stack (checked first: nothing is made for another)."""
    inventory = session.inventory
    deployed_security(session, stack_name, ("sasl_ssl",))
    security = pki.for_stack(inventory, stack_name, "sasl_ssl")
    assert security is not None
    return f"{inventory.hosts[0].address}:{port}", replace(security, verify_hostname=False)


def _client_user(name: str) -> str:
    if names.user_name(name) == ADMIN_USER:
        raise SpecError(f"'{ADMIN_USER}' is swarmkit's own user", hint="give client users names of their own")
    return name


def add_user(session: Session, stack_name: str, name: str, port: int = 9094) -> None:
    """Create the user (or set its kept password again: adding twice changes nothing)."""
    _client_user(name)
    bootstrap, security = _admin(session, stack_name, port)
    password = pki.Pki(pki.store_dir(session.inventory, stack_name)).password(name) or ""
    admin.set_scram_user(bootstrap, name, password, security)


def remove_user(session: Session, stack_name: str, name: str, port: int = 9094) -> None:
    _client_user(name)
    bootstrap, security = _admin(session, stack_name, port)
    admin.remove_scram_user(bootstrap, name, security)
    pki.Pki(pki.store_dir(session.inventory, stack_name)).forget(name)


def list_users(session: Session, stack_name: str, port: int = 9094) -> list[str]:
    bootstrap, security = _admin(session, stack_name, port)
    return admin.scram_users(bootstrap, security)


@dataclass(frozen=True)
class ClientConfig:
    text: str  # key=value lines
    ca_pem: str
    keystore_pem: str = ""  # ssl mode: the user's key and certificate


def _bootstrap_list(inventory: Inventory, stack_name: str, port: int) -> str:
    """What the last passing ``verify`` saw each broker advertise; else every host's name."""
    try:
        kept = json.loads(verified_state_path(inventory, stack_name).read_text())["brokers"]
        return ",".join(sorted(kept.values()))
    except (OSError, ValueError, KeyError):
        return ",".join(f"{host.name}:{port}" for host in inventory.hosts)


def client_config(
    session: Session, stack_name: str, security: str | None, user: str, fmt: str, ca_file: str, port: int = 9094
) -> ClientConfig:
    """A ready client configuration for ``user`` of the deployed stack, in its mode (``security``, when given, must
    be it); files it names (``ca_file``) are the caller's to write."""
    if fmt not in FORMATS:
        raise SpecError(f"format '{fmt}' is unknown", hint=f"use one of {', '.join(FORMATS)}")
    names.user_name(user)
    inventory = session.inventory
    mode = deployed_security(session, stack_name, check_security(security))
    client = pki.for_stack(inventory, stack_name, mode, user)
    assert client is not None  # a secure mode
    client = replace(client, ca_file=ca_file)
    keystore = str(Path(ca_file).with_name(f"{user}.pem")) if client.client else ""
    settings = {"bootstrap.servers": _bootstrap_list(inventory, stack_name, port)}
    settings |= client.file_settings(java=fmt == "properties", keystore_file=keystore)
    return ClientConfig(settings_text(settings), client.ca_pem, client.client.keystore if client.client else "")
