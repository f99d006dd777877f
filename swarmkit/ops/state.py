"""`swarmkit state export|import|status`: the store beside the inventory (``security.pki``) taken to another
directory, another user or another machine, and checked against the running cluster.

An import is checked whole before anything is written: the file (``security.backup``), then the cluster it is
for (the swarm's KRaft cluster id for the stack, and the CA that signed what a broker presents), then the
store already beside the inventory (a file it would change or remove is named, and kept unless ``replace``).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarmkit import files
from swarmkit.errors import OperationError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.session import Session
from swarmkit.security import backup, certs, pki
from swarmkit.stack.deployed import DeployedStack, not_deployed
from swarmkit.swarm import identity
from swarmkit.swarm.view import active_manager, engine_states

HANDSHAKE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Deployed:
    """What the running cluster says about a stack: its mode, KRaft cluster id, and a broker's certificate."""

    security: str
    cluster_id: str | None
    presented: str | None  # PEM; None in plaintext


def mismatch(state: backup.State, deployed: Deployed) -> str | None:
    """Why ``state`` is not the running cluster's (None: it is); pure."""
    if deployed.security == "plaintext" or deployed.presented is None:
        return f"stack '{state.stack}' runs in plaintext: it has no CA, the state holds one"
    if state.cluster_id and deployed.cluster_id and state.cluster_id != deployed.cluster_id:
        return f"the state is cluster {state.cluster_id}'s, the stack deployed here is cluster {deployed.cluster_id}"
    if not any(certs.signed_by(deployed.presented, ca) for ca in state.cas()):
        return "the brokers present certificates no CA of the state signed: it is another cluster's state"
    return None


def read_deployed(session: Session, stack: str, port: int) -> Deployed:
    inventory, docker = session.inventory, session.docker
    manager = docker[active_manager(inventory, engine_states(inventory, docker))]
    found = DeployedStack.read(manager, stack)
    if found is None:
        raise not_deployed(stack)
    cluster_id = identity.kept_cluster_id(dockerapi.swarm_nodes(manager), stack)
    if found.security == "plaintext":
        return Deployed(found.security, cluster_id, None)
    return Deployed(found.security, cluster_id, _presented(session, port))


def _presented(session: Session, port: int) -> str:
    """The certificate the first host that answers presents on the client port."""
    why = []
    for host in session.inventory.hosts:
        try:
            return pki.presented_certificate(host.address, port, HANDSHAKE_TIMEOUT)
        except OSError as error:
            why.append(f"{host.name}: {error}")
    raise OperationError(
        f"no broker presented its certificate on port {port} ({'; '.join(why)})",
        hint="check --external-port and that the brokers run: swarmkit status -i INVENTORY",
    )


def export_state(session: Session, stack: str) -> backup.State:
    """The stack's store, with the cluster id the swarm keeps for it (None when not deployed or not KRaft)."""
    directory = pki.store_dir(session.inventory, stack)
    kept = backup.read_store(directory)
    state = backup.State(stack, None, kept, datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    if not kept:
        raise SpecError(
            f"{directory}: nothing kept for stack '{stack}' here (a plaintext stack keeps nothing)",
            hint="run from the directory of the inventory the cluster was deployed with, or check --stack",
        )
    backup.check_state_ca(state, str(directory))
    manager = session.docker[active_manager(session.inventory, engine_states(session.inventory, session.docker))]
    cluster_id = identity.kept_cluster_id(dockerapi.swarm_nodes(manager), stack)
    return backup.State(stack, cluster_id, kept, state.exported)


@dataclass(frozen=True)
class ImportRequest:
    source: Path
    stack: str
    port: int = 9094
    replace: bool = False  # overwrite files the store here holds that differ from the import's


@dataclass(frozen=True)
class ImportReport:
    directory: Path
    written: bool  # False: the store here already held exactly this state
    files: int
    users: tuple[str, ...]
    replaced: tuple[str, ...]  # files here that differed and were overwritten or removed

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "directory": str(self.directory),
            "written": self.written,
            "files": self.files,
            "users": list(self.users),
            "replaced": list(self.replaced),
        }


def read_import(request: ImportRequest, passphrase: Callable[[], str]) -> backup.State:
    """The state in the file, checked (the passphrase asked only once the file looks like a state file)."""
    data = files.read_binary(request.source, "state file", backup.MAX_BYTES)
    state = backup.unseal(backup.read_sealed(data, str(request.source)), passphrase(), str(request.source))
    if state.stack != request.stack:
        raise SpecError(
            f"{request.source}: the state is stack '{state.stack}'s, not '{request.stack}'s",
            hint=f"import it with --stack {state.stack}",
        )
    return state


def import_state(session: Session, request: ImportRequest, passphrase: Callable[[], str]) -> ImportReport:
    state = read_import(request, passphrase)
    why = mismatch(state, read_deployed(session, request.stack, request.port))
    if why:
        raise SpecError(
            f"{request.source}: {why}; nothing was written", hint="import the state of the cluster this inventory runs"
        )
    directory = pki.store_dir(session.inventory, request.stack)
    current = backup.read_store(directory)
    differ = tuple(backup.changed(current, state.files))
    if differ and not request.replace:
        raise SpecError(
            f"{directory} already holds {len(differ)} file(s) the import would change or remove: {', '.join(differ[:5])}",
            hint="export this store first if it matters, then import with --replace; nothing was written",
        )
    written = current != state.files
    if written:
        backup.install(directory, state.files)
    return ImportReport(directory, written, len(state.files), tuple(state.users()), differ)


@dataclass(frozen=True)
class StateStatus:
    directory: Path
    files: int
    users: tuple[str, ...]
    brokers: int  # broker certificates kept
    rotation: str  # the CA rotation under way ('' none)
    expiry: pki.Expiry
    matches: bool
    why: str  # when it does not match the running cluster

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.matches,
            "directory": str(self.directory),
            "files": self.files,
            "users": list(self.users),
            "broker_certificates": self.brokers,
            "ca_rotation": self.rotation,
            "ca_days": self.expiry.ca_days,
            "broker_days": self.expiry.broker_days,
            "matches_cluster": self.matches,
            "why": self.why,
        }


def status(session: Session, stack: str, port: int) -> StateStatus:
    """What the store beside the inventory keeps for the stack, and whether it belongs to the running cluster."""
    store = pki.Pki(pki.store_dir(session.inventory, stack))
    kept = backup.read_store(store.directory)
    state = backup.State(stack, None, kept)
    why = "nothing kept here" if not kept else mismatch(state, read_deployed(session, stack, port)) or ""
    step = store.rotation() if kept else None
    return StateStatus(
        store.directory,
        len(kept),
        tuple(state.users()),
        sum(1 for name in kept if name.startswith("broker-") and name.endswith(".crt")),
        f"step {step.step} of 3, {'rolled out' if step.rolled else 'started'}" if step else "",
        pki.expiry(store),
        not why,
        why,
    )
