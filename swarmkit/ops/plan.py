"""What `render`, `deploy` and `up` are asked to do: the options resolved against the inventory and checked
once, before any engine is contacted, so bad input changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from swarmkit import waits
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import DeclaredQuota, Inventory
from swarmkit.security import acls
from swarmkit.security.settings import ADMIN_USER, KEEPER_USER
from swarmkit.stack.compose import Advertise, StackRequest
from swarmkit.stack.controllers import ControllerSet
from swarmkit.stack.engines import BrokerEngine, engine_for
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.render import check_request
from swarmkit.stack.topics import TopicSpec, declared_topics, format_topic_specs, parse_topic_specs

# Stands in for a KRaft cluster id that is not known yet, so that validation (which needs one)
# can run before anything is contacted; never rendered into a stack that is deployed.
VALIDATION_CLUSTER_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(frozen=True)
class DeployOptions:
    """What to deploy; what is left unset (None or "") comes from the inventory's ``stack:`` block."""

    engine: str | None = None
    image: str | None = None
    advertise: str = ""  # hostname | inventory-address | command; "": the inventory's, else hostname
    hostname_command: str | None = None
    topics: str = ""  # name:partitions:replicas[:key=value...], comma-separated; "": the inventory's topics
    stack_name: str = "kafka"
    timeout: float | None = None  # the most seconds to wait for every broker; None: 600 + 60 per node
    stall_timeout: float = waits.STALL_TIMEOUT  # a wait in which no broker changes phase for this long fails
    listeners: ListenerPlan = field(default_factory=ListenerPlan)
    cluster_id: str | None = None  # apache: None = the one kept in the swarm (generated on first deploy)
    replication_factor: int | None = None
    extra_env: tuple[tuple[str, str], ...] = ()  # added to (and winning over) the inventory's broker_env
    check_kafka: bool = True  # False: wait for running tasks only (an image that serves no Kafka)
    security: str | None = None  # sasl_ssl | ssl | plaintext; None: the inventory's, else the plan's
    internal_port: int | None = None  # None: the inventory's stack.ports, else the listener plan's
    external_port: int | None = None

    def resolved(self, inventory: Inventory) -> DeployOptions:
        """Fill what is unset from the inventory; the inventory's image only goes with its engine."""
        declared = inventory.stack
        engine = self.engine or declared.engine
        image = self.image or (declared.image if engine == declared.engine else None) or None
        security = self.security or declared.security or self.listeners.security
        command = self.hostname_command or declared.hostname_command or None
        advertise = self.advertise or declared.advertise or (Advertise.COMMAND.value if command else Advertise.HOSTNAME.value)
        env = tuple({**dict(declared.broker_env), **dict(self.extra_env)}.items())
        internal = self.internal_port or declared.internal_port
        external = self.external_port or declared.external_port
        listeners = self.listeners.with_security(security)
        if internal or external:
            listeners = ListenerPlan.build(
                internal_port=internal or listeners.internal_listener.port,
                external_port=external or listeners.external_listener.port,
                security=security,
            )
        return replace(
            self, engine=engine, image=image, security=security, hostname_command=command, advertise=advertise,
            extra_env=env, listeners=listeners, internal_port=None, external_port=None,
        )  # fmt: skip

    def overrides(self, inventory: Inventory) -> list[str]:
        """The options given for this run that replace what the inventory declares (the CLI says so)."""
        declared = inventory.stack
        pairs = (
            ("engine", self.engine, declared.engine),
            ("image", self.image, declared.image),
            ("security", self.security, declared.security),
            ("advertise", self.advertise, declared.advertise),
            ("hostname_command", self.hostname_command, declared.hostname_command),
            ("topics", self.topics, format_topic_specs(declared_topics(inventory))),
            ("ports", self.internal_port, declared.internal_port),
            ("ports", self.external_port, declared.external_port),
        )
        return [
            f"{'--' + key.replace('_', '-') if key != 'ports' else 'a port option'} {given} overrides the inventory's "
            f"stack.{key} ({kept}) for this run"
            for key, given, kept in pairs
            if given and kept and key in declared.given and str(given) != str(kept)
        ]


@dataclass(frozen=True)
class DeployPlan:
    """A resolved, validated request to deploy: made once per command by :func:`plan`."""

    inventory: Inventory
    options: DeployOptions  # engine, image and security filled in from the inventory
    engine: BrokerEngine

    @property
    def topics(self) -> list[TopicSpec]:
        return topics_for(self.inventory, self.options)

    @property
    def users(self) -> dict[str, tuple[acls.Grant, ...]]:
        return declared_users(self.inventory)

    @property
    def quotas(self) -> tuple[DeclaredQuota, ...] | None:
        """The declared client quotas; None: the inventory declares none (the cluster's are left alone)."""
        return self.inventory.stack.quotas

    @property
    def warnings(self) -> list[str]:
        return zone_warnings(self.inventory, self.topics)

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
    if declared_users(inventory) and options.listeners.security != "sasl_ssl":
        raise SpecError(
            f"stack.users: users and their grants need a sasl_ssl stack, and this one is {options.listeners.security}",
            hint="set stack.security: sasl_ssl in the inventory (or --security sasl_ssl), or leave stack.users out",
        )
    check_quotas(inventory, engine, options.listeners.security)
    return DeployPlan(inventory, options, engine)


def check_quotas(inventory: Inventory, engine: BrokerEngine, security: str) -> None:
    """Client quotas need Apache Kafka's brokers, and quotas of users need clients that log in."""
    declared = inventory.stack.quotas or ()
    if declared and not engine.CLIENT_QUOTAS:
        raise SpecError(
            f"stack.quotas: client quotas need Apache Kafka brokers, and this stack's engine is {engine.NAME}",
            hint="set stack.engine: apache, or leave stack.quotas out",
        )
    users = [quota.user for quota in declared if quota.user]
    if users and security == "plaintext":
        raise SpecError(
            f"stack.quotas: a quota of user {users[0]} needs clients that log in, and this stack is plaintext "
            "(every client is ANONYMOUS)",
            hint="give the quota a client_id instead of a user, or set stack.security: sasl_ssl",
        )


def declared_users(inventory: Inventory) -> dict[str, tuple[acls.Grant, ...]]:
    """The users the inventory's ``stack:`` block declares, each with its whole set of grants (SpecError naming
    the user whose grant is wrong)."""
    users = {}
    for user in inventory.stack.users:
        if user.name in (ADMIN_USER, KEEPER_USER):
            raise SpecError(f"stack.users: '{user.name}' is swarmkit's own user", hint="give client users names of their own")
        try:
            users[user.name] = acls.parse_grants(user.allow)
        except SpecError as error:
            where = inventory.path or "the inventory"
            raise SpecError(f"{where}: stack.users.{user.name}: {error.message}", hint=error.hint) from None
    return users


def topics_for(inventory: Inventory, options: DeployOptions) -> list[TopicSpec]:
    """The topics to ensure: the inventory's declared ones unless --topics replaces them for this run."""
    return parse_topic_specs(options.topics) if options.topics else declared_topics(inventory)


def zone_warnings(inventory: Inventory, topics: Sequence[TopicSpec]) -> list[str]:
    """Zones that cannot hold a replica each (Kafka then puts two copies in one zone), and hosts left without one."""
    zones = sorted(set(inventory.zones.values()))
    if not zones:
        return []
    unzoned = [h.name for h in inventory.hosts if h.name not in inventory.zones]
    found = [f"hosts without a zone label: {', '.join(unzoned)} (their brokers get no broker.rack)"] if unzoned else []
    return found + [
        f"topic {t.name}: {t.replicas} replicas but only {len(zones)} zone(s) ({', '.join(zones)}): "
        "a zone lost can take more than one copy of a partition"
        for t in topics
        if t.replicas > len(zones)
    ]


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
        topics=topics_for(inventory, options),
        stack_name=options.stack_name,
        cluster_id=cluster_id,
        replication_factor=options.replication_factor,
        extra_env=options.extra_env,
        controllers=controllers,
    )
