"""Client users of a sasl_ssl cluster and the configuration files clients connect with.

A user's password is made here, kept in the stack's store beside the inventory (``security.pki``)
and given to the cluster as a salted SCRAM-SHA-512 credential through the admin API, as swarmkit's
own admin.  Calls go through the first inventory host's published port; the CA is checked, the
host name is not (that host's certificate names what it advertises, which may not be its address).

A user's removal must not cost the others their credentials.  Kafka 4.3.1 and 4.4.0 (``ScramDelta.apply``)
drop a mechanism's whole credential map as soon as a removal leaves it empty while a delta is applied, and
the users put back later in that delta go into the dropped map: a broker or controller that replays its
metadata log from the start (a restart before it has a snapshot) after ``users remove alice`` loses every
SCRAM-SHA-512 credential, ``swarmkit-admin``'s included.  A delta's users are walked in Java ``HashMap``
order: bucket 0 first, and in a bucket, oldest first.  ``KEEPER_USER``'s ``hashCode()`` is 0, so it is in
bucket 0 whatever the table's size; made before any client user and never removed, it is walked before
any removal and keeps the map from ever being empty.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit import files, names
from swarmkit.checks import diagnose
from swarmkit.errors import BrokerError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.ops.declared import diff_users, user_states
from swarmkit.security import acls, pki
from swarmkit.security.settings import ADMIN_USER, KEEPER_USER, ClientSecurity, settings_text
from swarmkit.stack.deployed import SECURITY_LABEL, broker_service, verified_state_path

FORMATS = ("properties", "librdkafka")
TIMEOUT = 15.0  # each admin call: a TLS handshake and a SCRAM login on a busy broker (5 s timed out at load 100)
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
    if names.user_name(name) in (ADMIN_USER, KEEPER_USER):
        raise SpecError(f"'{name}' is swarmkit's own user", hint="give client users names of their own")
    return name


def _kafka(session: Session, stack_name: str, port: int) -> admin.KafkaAdmin:
    """swarmkit's admin on the stack's cluster, for one command."""
    bootstrap, security = _admin(session, stack_name, port)
    return admin.KafkaAdmin(bootstrap, security, TIMEOUT)


def _keep_credentials(kafka: admin.KafkaAdmin) -> None:
    """Make ``KEEPER_USER`` (with a password nobody keeps) unless the cluster has it: see the module's docstring."""
    if KEEPER_USER not in kafka.scram_users():
        kafka.set_scram_user(KEEPER_USER, secrets.token_urlsafe(32))


def add_user(session: Session, stack_name: str, name: str, allow: Sequence[str] = (), port: int = 9094) -> UserInfo:
    """Create the user (or set its kept password again: adding twice changes nothing); ``allow`` specs, when
    given, become the user's whole set of grants, else its grants are left as they are (none for a new user)."""
    _client_user(name)
    grants = acls.parse_grants(allow)
    with _kafka(session, stack_name, port) as kafka:  # refuses a stack not in sasl_ssl before a password is made
        password = pki.Pki(pki.store_dir(session.inventory, stack_name)).password(name) or ""
        _keep_credentials(kafka)
        kafka.set_scram_user(name, password)
        return UserInfo(name, kafka.set_grants(name, grants) if allow else kafka.user_grants(name))


def reconcile_users(
    session: Session, stack_name: str, declared: Mapping[str, Sequence[acls.Grant]], port: int = 9094
) -> list[str]:
    """`up`'s step for the inventory's declared users: each one missing is made (its password kept here), each
    one whose grants differ gets exactly the declared ones; returns what was done. Other users are left alone."""
    with _kafka(session, stack_name, port) as kafka:
        changes = diff_users(declared, user_states(kafka, list(declared)))
        if changes:
            _keep_credentials(kafka)
        store = pki.Pki(pki.store_dir(session.inventory, stack_name))
        for change in changes:
            if change.action == "create":
                kafka.set_scram_user(change.user, store.password(change.user) or "")
            kafka.set_grants(change.user, declared[change.user])
    return [change.line() for change in changes]


def remove_user(session: Session, stack_name: str, name: str, port: int = 9094) -> None:
    """Remove the user's grants, then its credential and kept password (a user made again starts with none)."""
    _client_user(name)
    with _kafka(session, stack_name, port) as kafka:
        kafka.set_grants(name, ())
        _keep_credentials(kafka)
        kafka.remove_scram_user(name)
    pki.Pki(pki.store_dir(session.inventory, stack_name)).forget(name)


@dataclass(frozen=True)
class UserInfo:
    name: str
    grants: tuple[acls.Grant, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "grants": [grant.spec for grant in self.grants]}


def list_users(session: Session, stack_name: str, port: int = 9094) -> list[UserInfo]:
    """The cluster's SCRAM users but ``KEEPER_USER``, with their grants."""
    with _kafka(session, stack_name, port) as kafka:
        found = [user for user in kafka.scram_users() if user != KEEPER_USER]
        return [UserInfo(user, () if user == ADMIN_USER else kafka.user_grants(user)) for user in found]


@dataclass(frozen=True)
class TopicAccess:
    """What one user may do on one topic, as the brokers' authorizer answers it."""

    topic: str
    operations: tuple[str, ...]  # read, write, describe…; () when the topic is not even visible to the user

    @property
    def produce(self) -> bool:
        return bool({"write", "all"} & set(self.operations))

    @property
    def consume(self) -> bool:
        return bool({"read", "all"} & set(self.operations))

    @property
    def verdict(self) -> str:
        if self.produce or self.consume:
            may = " and ".join(what for what, yes in (("produce", self.produce), ("consume", self.consume)) if yes)
            return f"may {may}" + ("" if self.produce and self.consume else " only")
        return "refused: no grant of this user's covers the topic (the brokers answer TOPIC_AUTHORIZATION_FAILED)"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "produce": self.produce, "consume": self.consume, "verdict": self.verdict}


@dataclass(frozen=True)
class UserCheck:
    """``users check``: the user's login and, per topic, what it may do."""

    user: str
    grants: tuple[acls.Grant, ...]
    topics: tuple[TopicAccess, ...]
    named: bool  # the topics were named by the caller: each must be usable, not just one
    login_error: str = ""
    fix: str = ""

    @property
    def ok(self) -> bool:
        usable = [access.produce or access.consume for access in self.topics]
        return not self.login_error and (all(usable) if self.named else any(usable))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "user": self.user,
            "grants": [grant.spec for grant in self.grants],
            "topics": [access.to_dict() for access in self.topics],
            "login_error": self.login_error,
            "fix": self.fix,
        }


def check_user(session: Session, stack_name: str, name: str, topics: Sequence[str] = (), port: int = 9094) -> UserCheck:
    """Log in as the user (its kept password) and ask what it may do on ``topics`` (default: every topic).

    Not part of ``verify``: verify logs in as swarmkit's admin, a super user the authorizer never refuses."""
    _client_user(name)
    login = pki.for_stack(session.inventory, stack_name, "sasl_ssl", name)
    assert login is not None
    with _kafka(session, stack_name, port) as kafka:
        grants = kafka.user_grants(name)
        wanted = list(topics) or [topic.name for topic in kafka.metadata().topics]
    try:
        with admin.KafkaAdmin(kafka.bootstrap, replace(login, verify_hostname=False), TIMEOUT) as as_user:
            found = as_user.authorized_topic_operations(wanted)
    except BrokerError as error:
        cause, fix = diagnose.security_failure(error.message) or (error.message, error.hint)
        return UserCheck(name, grants, (), bool(topics), cause, fix)
    accesses = tuple(TopicAccess(topic, found[topic]) for topic in wanted)
    refused = [access.topic for access in accesses if not (access.produce or access.consume)]
    fix = f"grant it: swarmkit users add {name} -i INVENTORY --allow topic:{refused[0]}:read,write" if refused else ""
    return UserCheck(name, grants, accesses, bool(topics), fix=fix)


@dataclass(frozen=True)
class ClientConfig:
    text: str  # key=value lines
    ca_pem: str
    keystore_pem: str = ""  # ssl mode: the user's key and certificate


def _bootstrap_list(inventory: Inventory, stack_name: str, port: int) -> str:
    """What the last passing ``verify`` saw each broker advertise; else every host's name."""
    try:
        kept = json.loads(files.read_text(verified_state_path(inventory, stack_name)))["brokers"]
        return ",".join(sorted(kept.values()))
    except (OSError, ValueError, KeyError, files.FileProblem):
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
