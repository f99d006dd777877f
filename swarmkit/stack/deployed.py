"""A deployed stack as its readers see it: the one module that spells its service and volume names and the
``swarmkit.*`` labels (Docker's own stack label comes from the Docker adapter) the writer (``stack.compose``, ``swarm``) puts on services and nodes.

verify, status, roll, rebalance, reassign, remove-node, users and down all read a stack that an earlier
run wrote; naming it here keeps a rename from silently splitting writer and readers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swarmkit.defaults import DEFAULT_ENGINE
from swarmkit.errors import OperationError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, ServiceState, SwarmNode
from swarmkit.hosts.inventory import Inventory
from swarmkit.stack.topics import TopicSpec, parse_topic_specs

ENGINE_LABEL = "swarmkit.engine"  # the broker service's engine (apache, tansu)
SECURITY_LABEL = "swarmkit.security"  # the broker service's mode, read back by whatever connects later
TOPICS_LABEL = "swarmkit.topics"  # the topics `up` created, so that verify checks them without --topics
ROLLED_LABEL = "swarmkit.roll.settings"  # the env variables `roll --set` added: a later roll may change them
HOST_LABEL = "swarmkit.host"  # a swarm node's inventory host name
ID_LABEL = "swarmkit.broker-id"  # a swarm node's broker id, kept for the node's life
NEXT_LABEL = "swarmkit.broker-id.next"  # on managers: the next free broker id
CLUSTER_ID_LABEL = "swarmkit.cluster-id"  # on managers, suffixed with the stack: its KRaft cluster id
QUORUM_LABEL = "swarmkit.quorum"  # on managers, suffixed with the stack: its controllers (stack.controllers)
PROBE_LABEL = "swarmkit.probe"  # preflight's probe containers

IDENTITY_DIR = "/swarmkit/identity"  # where a broker finds its node's identity file
IDENTITY_FILE = f"{IDENTITY_DIR}/node.env"
MAX_BROKER_ID = 9000  # broker ids are 1..9000; apache controller i has id 9000 + i


def broker_service(stack: str) -> str:
    return f"{stack}_broker"


def overlay_network(stack: str) -> str:
    """The stack's overlay network (attachable): where its internal listener and metrics ports are reached."""
    return f"{stack}_internal"


def controller_services(stack: str, services: list[str]) -> tuple[str, ...]:
    """The apache engine's KRaft controllers (``<stack>_controller-N``) among a stack's services."""
    prefix = f"{stack}_controller-"
    return tuple(sorted(s for s in services if s.startswith(prefix) and s.removeprefix(prefix).isdigit()))


def identity_volume(stack: str) -> str:
    return f"{stack}_identity"


def data_volume(stack: str) -> str:
    return f"{stack}_data"


def identity_job(stack: str, node_id: str) -> str:
    return f"{stack}_identity-{node_id[:12]}"


def verified_state_path(inventory: Inventory, stack: str) -> Path:
    """Where verify keeps the stack's last passing result, beside the inventory (users and down read it too)."""
    source = Path(inventory.path or "inventory.yaml")
    return source.parent / ".swarmkit" / f"{source.stem}.{stack}.verified.json"


def broker_id_of(node: SwarmNode) -> int | None:
    """The broker id swarmkit gave this node, if any."""
    value = node.labels.get(ID_LABEL, "")
    return int(value) if value.isdigit() else None


def host_of(node: SwarmNode) -> str:
    """The inventory host a swarm node was joined as ('' for a node swarmkit did not join)."""
    return node.labels.get(HOST_LABEL, "")


@dataclass(frozen=True)
class DeployedStack:
    """A stack's broker service as deployed: its engine, security mode and topics come from its labels."""

    name: str
    service: ServiceState

    @property
    def broker_service(self) -> str:
        return broker_service(self.name)

    @property
    def engine(self) -> str:
        return self.service.labels.get(ENGINE_LABEL, DEFAULT_ENGINE)

    @property
    def security(self) -> str:
        return self.service.labels.get(SECURITY_LABEL, "plaintext")

    @property
    def topics(self) -> list[TopicSpec]:
        return parse_topic_specs(self.service.labels.get(TOPICS_LABEL, ""))

    @classmethod
    def read(cls, manager: Engine, name: str) -> DeployedStack | None:
        """The stack as the manager sees it now; None when its broker service does not exist."""
        service = dockerapi.service_state(manager, broker_service(name))
        return None if service is None else cls(name, service)

    @classmethod
    def require(cls, manager: Engine, name: str) -> DeployedStack:
        deployed = cls.read(manager, name)
        if deployed is None:
            raise not_deployed(name)
        return deployed


def not_deployed(name: str) -> OperationError:
    return OperationError(
        f"stack '{name}' is not deployed (no service {broker_service(name)})",
        hint="deploy it with: swarmkit up -i INVENTORY (or check --stack)",
    )
