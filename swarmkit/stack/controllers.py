"""The apache engine's KRaft controllers: which node ids run where, and how the quorum may change (pure).

A new cluster gets a dynamic quorum (KIP-853): every controller is formatted with the same
``--initial-controllers`` list (ids, service names, directory ids derived from the cluster id), and
brokers and controllers find the quorum through ``controller.quorum.bootstrap.servers``.  Voters can then
be removed and added (``swarmkit replace-node``).  The set is kept in the swarm as one label on every
manager (``swarmkit.quorum.<stack>``), so a later deploy renders the same controllers, pinned to the same
managers, whatever the inventory's order.  Clusters deployed before this have no such label: they keep
their static ``controller.quorum.voters`` (one controller per inventory manager, in inventory order) and
cannot change their voters.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace

from swarmkit.errors import OperationError, SpecError
from swarmkit.stack.deployed import MAX_BROKER_ID

STATIC_REFUSAL = "static quorum: replace-node not available"


@dataclass(frozen=True)
class Controller:
    node_id: int
    host: str  # the inventory host (swarm node hostname) it is pinned to

    @property
    def service(self) -> str:
        """Its service in the stack: ids are never reused, so neither are service names."""
        return f"controller-{self.node_id - MAX_BROKER_ID}"


@dataclass(frozen=True)
class ControllerSet:
    """The controllers a stack runs; ``initial``: the ids formatted together when the cluster was created."""

    controllers: tuple[Controller, ...]
    dynamic: bool = True
    initial: tuple[int, ...] = ()
    next_id: int = MAX_BROKER_ID + 1  # the next controller id ever to be handed out

    @classmethod
    def first(cls, managers: Sequence[str]) -> ControllerSet:
        """A new cluster's dynamic quorum: one controller per manager, in inventory order."""
        static = cls.static(managers)
        ids = tuple(c.node_id for c in static.controllers)
        return cls(static.controllers, True, ids, MAX_BROKER_ID + len(ids) + 1)

    @classmethod
    def static(cls, managers: Sequence[str]) -> ControllerSet:
        """A cluster deployed with static voters: controller i (id 9000 + i) on the i-th manager."""
        controllers = tuple(Controller(MAX_BROKER_ID + i, host) for i, host in enumerate(managers, start=1))
        return cls(controllers, False, (), MAX_BROKER_ID + len(controllers) + 1)

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(c.host for c in self.controllers)

    @property
    def initial_services(self) -> tuple[str, ...]:
        """The initial controllers' service names: fixed for the cluster's life, whatever replaces them later."""
        return tuple(Controller(node_id, "").service for node_id in self.initial)

    def on(self, host: str) -> Controller | None:
        return next((c for c in self.controllers if c.host == host), None)

    def label(self) -> str:
        """What the managers keep: ``initial=9001,9002,9003 next=9004 9001@m1 9002@m2 9003@m3`` (``static``
        instead of ``initial=...`` for fixed voters)."""
        members = " ".join(f"{c.node_id}@{c.host}" for c in self.controllers)
        kind = f"initial={','.join(map(str, self.initial))}" if self.dynamic else "static"
        return f"{kind} next={self.next_id} {members}"

    @classmethod
    def parse(cls, text: str) -> ControllerSet:
        fields = dict(token.split("=", 1) for token in text.split() if "=" in token)
        members = [token.split("@", 1) for token in text.split() if "@" in token]
        try:
            controllers = tuple(Controller(int(node_id), host) for node_id, host in members)
            initial = tuple(int(i) for i in fields.get("initial", "").split(",") if i)
            return cls(controllers, "static" not in text.split(), initial, int(fields["next"]))
        except (KeyError, ValueError):
            raise OperationError(
                f"the kept controller quorum '{text}' cannot be read",
                hint="it is the swarmkit.quorum.<stack> label on the managers; restore it from another manager",
            ) from None

    def replaced(self, dead: str, new: str) -> ControllerSet:
        """The set with the controller on ``dead`` gone and a new one, with a new id, on ``new``."""
        kept = tuple(c for c in self.controllers if c.host != dead)
        return replace(self, controllers=(*kept, Controller(self.next_id, new)), next_id=self.next_id + 1)


def directory_id(cluster_id: str, node_id: int) -> str:
    """The metadata directory id an initial controller is formatted with: derived from the cluster id, so that
    every controller's ``--initial-controllers`` is the same without anything else being kept."""
    namespace = uuid.UUID(bytes=base64.urlsafe_b64decode(cluster_id + "=="))
    return base64.urlsafe_b64encode(uuid.uuid5(namespace, str(node_id)).bytes).decode("ascii").rstrip("=")


def initial_controllers(controllers: ControllerSet, cluster_id: str, port: int) -> str:
    """``--initial-controllers``: ``id@service:port:directory-id`` of every initial controller."""
    return ",".join(
        f"{node_id}@{service}:{port}:{directory_id(cluster_id, node_id)}"
        for node_id, service in zip(controllers.initial, controllers.initial_services, strict=True)
    )


def majority(voters: int) -> int:
    return voters // 2 + 1


def check_manager_set(kept: ControllerSet, managers: Sequence[str], inventory_path: str) -> None:
    """``up`` and ``deploy`` refuse an inventory whose managers differ from the hosts the controllers run on:
    a controller moves only through ``replace-node``, which keeps the quorum's majority throughout."""
    gone = [h for h in kept.hosts if h not in managers]
    added = [h for h in managers if h not in kept.hosts]
    if not gone and not added:
        return
    change = ", ".join([f"{h} is no longer a manager" for h in gone] + [f"{h} is a new manager" for h in added])
    if not kept.dynamic:
        raise SpecError(
            f"the inventory's managers changed ({change}); the controllers run on {', '.join(kept.hosts)}",
            hint=f"{STATIC_REFUSAL}: this cluster's quorum has fixed voters; restore the inventory's managers",
        )
    if len(gone) == 1 and len(added) == 1:
        command = f"swarmkit replace-node {gone[0]} {added[0]} -i {inventory_path}"
    else:
        command = f"swarmkit replace-node DEAD NEW -i {inventory_path}, one manager at a time"
    raise SpecError(
        f"the inventory's managers changed ({change}); the controllers run on {', '.join(kept.hosts)}",
        hint=f"a controller moves with: {command}",
    )
