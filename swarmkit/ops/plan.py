"""What `render`, `deploy` and `up` are asked to do: the options resolved against the inventory and checked
once, before any engine is contacted, so bad input changes nothing."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from swarmkit import waits
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory
from swarmkit.stack.compose import StackRequest
from swarmkit.stack.controllers import ControllerSet
from swarmkit.stack.engines import BrokerEngine, engine_for
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.render import check_request
from swarmkit.stack.topics import parse_topic_specs

# Stands in for a KRaft cluster id that is not known yet, so that validation (which needs one)
# can run before anything is contacted; never rendered into a stack that is deployed.
VALIDATION_CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class DeployOptions:
    """What to deploy; ``None`` engine/image come from the inventory's ``stack:`` block."""

    engine: str | None = None
    image: str | None = None
    advertise: str = "hostname"  # hostname | inventory-address | command
    hostname_command: str | None = None
    topics: str = ""  # name:partitions:replicas[:key=value...], comma-separated
    stack_name: str = "kafka"
    timeout: float | None = None  # the most seconds to wait for every broker; None: 600 + 60 per node
    stall_timeout: float = waits.STALL_TIMEOUT  # a wait in which no broker changes phase for this long fails
    listeners: ListenerPlan = field(default_factory=ListenerPlan)
    cluster_id: str | None = None  # apache: None = the one kept in the swarm (generated on first deploy)
    replication_factor: int | None = None
    extra_env: tuple[tuple[str, str], ...] = ()
    check_kafka: bool = True  # False: wait for running tasks only (an image that serves no Kafka)
    security: str | None = None  # sasl_ssl | ssl | plaintext; None: the inventory's, else the plan's

    def resolved(self, inventory: Inventory) -> DeployOptions:
        """Fill engine, image and security from the inventory; the inventory's image only goes with its engine."""
        engine = self.engine or inventory.stack.engine
        image = self.image or (inventory.stack.image if engine == inventory.stack.engine else None) or None
        security = self.security or inventory.stack.security or self.listeners.security
        return replace(self, engine=engine, image=image, security=security, listeners=self.listeners.with_security(security))


@dataclass(frozen=True)
class DeployPlan:
    """A resolved, validated request to deploy: made once per command by :func:`plan`."""

    inventory: Inventory
    options: DeployOptions  # engine, image and security filled in from the inventory
    engine: BrokerEngine

    @property
    def broker_image(self) -> str:
        return self.options.image or self.engine.DEFAULT_IMAGE


def plan(inventory: Inventory, options: DeployOptions) -> DeployPlan:
    """Resolve ``options`` against the inventory and run every check that needs no Docker engine (SpecError)."""
    options = options.resolved(inventory)
    engine = engine_for(options.engine or "")
    if options.timeout is not None and options.timeout <= 0:
        raise SpecError(f"timeout: {options.timeout:g}s", hint="give the brokers a positive time to start, e.g. 900")
    if options.stall_timeout <= 0:
        raise SpecError(f"stall timeout: {options.stall_timeout:g}s", hint="give each phase a positive time, e.g. 180")
    request = stack_request(inventory, options, options.cluster_id or (VALIDATION_CLUSTER_ID if engine.KRAFT else None))
    check_request(request)
    if request.topics and not options.check_kafka:
        raise SpecError("topics: creating topics needs brokers that answer Kafka", hint="drop the topics or the no-Kafka wait")
    return DeployPlan(inventory, options, engine)


def stack_request(
    inventory: Inventory, options: DeployOptions, cluster_id: str | None, controllers: ControllerSet | None = None
) -> StackRequest:
    """What the renderer gets; ``cluster_id`` and ``controllers`` are known only once the swarm was read (apache)."""
    return StackRequest(
        inventory=inventory,
        engine=options.engine or inventory.stack.engine,
        image=options.image,
        advertise=options.advertise,
        hostname_command=options.hostname_command,
        listeners=options.listeners,
        topics=parse_topic_specs(options.topics),
        stack_name=options.stack_name,
        cluster_id=cluster_id,
        replication_factor=options.replication_factor,
        extra_env=options.extra_env,
        controllers=controllers,
    )
