"""The apache engine: the official ``apache/kafka`` image in KRaft mode, no ZooKeeper.

Brokers: one per node (the shared global service of ``swarmkit.stack.render``), node id read from the
identity volume by the entrypoint (``stacks/apache/entrypoint.sh`` and ``stacks/node-identity.sh``,
mounted as swarm configs, so the official image needs nothing added).  Controllers: one replicated
service per controller of the kept quorum (``swarmkit.stack.controllers``: at first one per manager of the
inventory), ``controller-N`` with node id ``MAX_BROKER_ID + N`` so ids never collide with broker ids, pinned
with ``node.hostname == <name>``, reached over the overlay by their service names (dnsrr).  A dynamic quorum
is found through the alias every controller shares on the overlay (``controllers``), so a controller added
later changes no other service; each controller's container is named after its service, which is the
endpoint it registers as a voter.
"""

from __future__ import annotations

import base64
import uuid
from typing import Any

from swarmkit import names
from swarmkit.defaults import EngineName
from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.security.settings import BROKER_TARGET, SCRAM_TARGET, SecretFile, secret_path
from swarmkit.stack import metrics
from swarmkit.stack.compose import (
    BROKER_SERVICE,
    KAFKA_UID,
    TASK_NAME,
    ConfigFile,
    StackRequest,
    advertise_env,
    broker_deploy,
    config_mount,
    host_port,
    identity_mount,
    kafka_env,
    replication_defaults,
    secret_mount,
    stack_script,
    volume,
    with_extra_env,
)
from swarmkit.stack.controllers import Controller, ControllerSet, initial_controllers
from swarmkit.stack.deployed import MAX_BROKER_ID
from swarmkit.stack.kafka_settings import (
    KafkaRole,
    broker_keystore_setting,
    broker_settings,
    controller_settings,
    security_settings,
)
from swarmkit.stack.listeners import ListenerPlan

NAME = EngineName.APACHE
KAFKA_VERSION = "4.4.0"
DEFAULT_IMAGE = f"apache/kafka:{KAFKA_VERSION}"
KRAFT = True
NEEDS_IDENTITY = True  # the broker id comes from the identity volume
SHARED_CLUSTER = True
JMX_METRICS = True
CLIENT_QUOTAS = True
KAFKA_VERSIONED = True  # the image is Apache Kafka of one release (stack.kafka_version)
IMAGE_START = "/etc/kafka/docker/run"  # the official image's CMD (KIP-975)
DATA_DIR = "/var/lib/kafka/data"  # exists in the image, owned by its user: a new volume inherits that
DATA_VOLUME = "data"
CONTROLLER_DATA_VOLUME = "controller-data"
STOP_GRACE = "60s"  # time for a controlled shutdown (partition leadership moves away first)
ENTRYPOINT_SCRIPTS = ("node-identity.sh", "apache/entrypoint.sh")  # the entrypoint last; it sources the other
TLS_BROKER_SCRIPT = "apache/tls-broker.sh"  # ssl/sasl_ssl: picks the broker's own certificate, then the entrypoint
CONTROLLER_SCRIPT = "apache/controller.sh"
CONTROLLERS_ALIAS = "controllers"  # every controller's name on the overlay, as well as its service name
# Every Kafka container starts with this, as root: it names the container's own addresses in /etc/hosts
# (a SASL login otherwise waits on a reverse DNS lookup of the address the client reached, KAFKA-19919),
# then runs the rest as the image's user.  Tools run in the containers as that user too.
LOCAL_NAMES_SCRIPT = "apache/local-names.sh"
START_USER = "root"
INTERNAL_CLIENT_FILE = "internal-client.properties"  # TLS: what Kafka's tools in a container connect with
# base64url, but never a leading '-': kafka-storage would read "--cluster-id -abc..." as an option
# Heaps sized so 3-4 brokers, their controllers and Spark share a 2-core, 24 GiB machine; on real
# servers raise them with extra_env (KAFKA_HEAP_OPTS), which these only default.
BROKER_HEAP = "-Xmx512m -Xms512m"
CONTROLLER_HEAP = "-Xmx256m -Xms256m"
# A controller serves metadata at a low rate: the client compiler alone and a serial collector
# start it with a fraction of the CPU that C2 and G1 take, which the brokers starting beside it need.
CONTROLLER_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
# Kafka's thread defaults suit large servers (8 I/O and 10 background threads per process); a
# small host runs several Kafka processes on 2 cores.  The brokers' are defaults that extra_env overrides.
BROKER_THREADS = {"num.network.threads": "2", "num.io.threads": "4", "background.threads": "4"}
CONTROLLER_THREADS = {"num.network.threads": "1", "num.io.threads": "2", "background.threads": "2"}
# An idle cluster's own traffic (measured per thread on a 3-node sandbox, benchmarks/busy_machine.py):
# the active controller appends a no-op record every 500 ms by default, which every controller writes
# and flushes and every broker fetches and applies: the largest share of an idle cluster's CPU.  Every
# 5 s keeps the metadata-lag metrics (KIP-835) meaningful at a tenth of that; elections and fencing do
# not depend on it (Raft fetches still poll every 500 ms, heartbeats every 2 s).
CONTROLLER_IDLE = {"metadata.max.idle.interval.ms": "5000"}
# A lost or cut-off broker stays leader and in every ISR until the active controller fences it, when its heartbeats
# have stopped for broker.session.timeout.ms (Kafka: 9 s, heartbeats every 2 s); acks=all writes to the partitions
# it leads or follows wait that long.  6 s shortens that pause by 3 s; the cost is a broker fenced when a busy host
# delays its heartbeats that long (measured with one core kept busy: docs/drills.md).  A heartbeat every second (six
# per session, Kafka's own 2 s in 9 s gives 4.5): after the quorum leader's loss a new active controller counts every
# broker's session from its own start, and a broker that found it late (its heartbeat waited for the lost one) must
# still heartbeat in time.  The session is the controllers' setting (every stack's), the heartbeat the brokers' (a
# default that extra_env overrides).
CONTROLLER_SESSION = {"broker.session.timeout.ms": "6000"}
BROKER_HEARTBEAT = {"broker.heartbeat.interval.ms": "1000"}
# A broker sends ISR changes (AlterPartition) and forwarded admin requests to the active controller it last knew, and
# waits controller.socket.timeout.ms (Kafka: 30 s) for an answer before it looks for another.  After the quorum
# leader's host is cut off, a broker whose ISR change went to it kept a partition below min ISR for those 30 s
# (docs/drills.md).  10 s: a request a busy but live controller takes longer to answer is sent again, which Kafka
# handles for AlterPartition; a forwarded request answered late may then report what it already did (a topic exists).
BROKER_CONTROLLER_REQUESTS = {"controller.socket.timeout.ms": "10000"}
# A new connection to a host that is cut off hangs until socket.connection.setup.timeout.ms (Kafka: 10 s, growing to
# 30 s on repeated failures).  A broker looking for the new quorum leader, or heartbeating, waits that long before it
# tries another controller: long enough for the new active controller to fence a healthy broker.  A controller cut off
# for a minute has grown it to 30 s, and after heal still waits out an attempt begun during the cut before it fetches
# from the leader again: for about 9 s the quorum leader had one follower, and a second host lost then cost it the
# majority and every broker a fresh session (docs/drills.md, run AC).  On a swarm's overlay a connection is set up in
# milliseconds: 2 s still leaves a busy host's TLS handshake time.  Not growing (Kafka's max): a heartbeat channel
# retrying the lost controller at 3.6 s made a healthy broker late (docs/drills.md).  Every broker's and controller's.
CONNECTION_SETUP = {"socket.connection.setup.timeout.ms": "2000", "socket.connection.setup.timeout.max.ms": "2000"}
# A broker that cannot register yet keeps trying instead of exiting after Kafka's 60 s: on a busy
# host the controllers' first election can take minutes, and an exit means a cold JVM restart.
REGISTRATION_TIMEOUT_MS = str(2**31 - 1)
# What a broker is given unless told otherwise (extra_env at deploy, `roll --set` later).
BROKER_DEFAULTS = {
    "KAFKA_HEAP_OPTS": BROKER_HEAP,
    **kafka_env(BROKER_THREADS | BROKER_HEARTBEAT | BROKER_CONTROLLER_REQUESTS | CONNECTION_SETUP),
}
# What a broker prints as it starts (its entrypoint, the image's start script, Kafka), and the phase
# each line begins: deploy and roll report these while they wait (swarmkit.ops.startup).
START_MARKERS: tuple[tuple[str, str], ...] = (
    ("swarmkit: waiting for the controller quorum:", "waiting for the controller quorum"),
    ("swarmkit: controller quorum listening", "controller quorum up"),
    ("===> Formatting storage", "formatting its storage"),
    ("===> Storage already formatted", "storage formatted before"),
    ("===> Launching kafka.Kafka", "JVM starting"),
    ("Transition from SHUTDOWN to STARTING", "JVM started, reaching the controllers"),
    ("is now STARTING", "registering with the controllers"),
    ("Successfully registered broker", "registered, catching up with the metadata"),
    ("The broker has caught up", "caught up, recovering its logs"),
    ("The broker has been unfenced", "unfenced, opening its listeners"),
    ("Kafka Server started", "started"),
    ("unable to register with the controller quorum", "gave up registering"),
)


def generate_cluster_id() -> str:
    """A new KRaft cluster id (a random UUID, base64url without padding, as kafka-storage makes).

    Call it once per cluster and keep the result: the renderer never invents one. Like Kafka's own
    Uuid.randomUuid, it draws again rather than start with '-', which one id in 64 would."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if names.CLUSTER_ID.fullmatch(cluster_id):
            return cluster_id


def topic_broker_limit(broker_count: int) -> int:
    return broker_count


def controller_set(request: StackRequest) -> ControllerSet:
    """The controllers the request renders: the kept quorum, else a new cluster's (one per manager)."""
    return request.controllers or ControllerSet.first([host.name for host in request.inventory.managers])


def _controller_port(request: StackRequest) -> int:
    controller = request.listeners.controller_listener
    assert controller is not None, "the apache engine always plans a controller listener"
    return controller.port


def quorum_env(request: StackRequest) -> dict[str, str]:
    """How a broker or controller finds the quorum: static voters, or (dynamic) the controllers' shared name and each
    initial controller's own. Several entries let a search for a new quorum leader try another controller when one
    leads to a lost host (docs/drills.md); naming only the initial ones keeps the setting, and so the brokers, unchanged
    when ``replace-node`` replaces a controller, which the shared name still finds."""
    controllers, port = controller_set(request), _controller_port(request)
    if controllers.dynamic:
        names = (CONTROLLERS_ALIAS, *controllers.initial_services)
        return {"KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS": ",".join(f"{name}:{port}" for name in names)}
    return {"KAFKA_CONTROLLER_QUORUM_VOTERS": ",".join(f"{c.node_id}@{c.service}:{port}" for c in controllers.controllers)}


def check(request: StackRequest) -> None:
    if not request.cluster_id:
        raise SpecError(
            "CLUSTER_ID: the apache engine needs a cluster id",
            hint="swarmkit generates one on the first deploy and keeps it; pass it to render with --cluster-id",
        )
    if not names.CLUSTER_ID.fullmatch(request.cluster_id):
        raise SpecError(
            f"CLUSTER_ID: '{request.cluster_id}' is not a KRaft cluster id",
            hint="a cluster id is 22 characters of base64url not starting with '-', e.g. from `kafka-storage.sh random-uuid`",
        )
    if not request.inventory.managers:
        raise SpecError(
            "controller.quorum.voters: the inventory has no manager to run a KRaft controller on",
            hint="give at least one host role: manager",
        )
    if request.broker_count > MAX_BROKER_ID:
        raise SpecError(f"inventory: more than {MAX_BROKER_ID} brokers", hint="broker ids must stay below controller ids")
    replication_defaults(request)  # a factor the brokers cannot hold is refused before any engine is asked


def _common_env(request: StackRequest, role: KafkaRole) -> dict[str, str]:
    return {
        "KAFKA_PROCESS_ROLES": role,
        "CLUSTER_ID": request.cluster_id or "",
        **quorum_env(request),
        "KAFKA_LOG_DIRS": DATA_DIR,
    }


def _broker(request: StackRequest) -> dict[str, Any]:
    plan = request.listeners
    scripts = _broker_scripts(plan)
    factor, min_isr = replication_defaults(request)
    settings = broker_settings(plan) | security_settings(plan, KafkaRole.BROKER)
    env = {
        **advertise_env(request),
        "SWARMKIT_INTERNAL_HOST": TASK_NAME,
        "SWARMKIT_ADVERTISED_LISTENERS": settings.pop("advertised.listeners"),
        "SWARMKIT_MAX_BROKER_ID": str(MAX_BROKER_ID),
        **_common_env(request, KafkaRole.BROKER),
        **kafka_env(settings),
        **kafka_env({"initial.broker.registration.timeout.ms": REGISTRATION_TIMEOUT_MS}),
        **kafka_env(
            {
                "default.replication.factor": str(factor),
                "min.insync.replicas": str(min_isr),
                "offsets.topic.replication.factor": str(factor),
                "transaction.state.log.replication.factor": str(factor),
                "transaction.state.log.min.isr": str(min_isr),
                "share.coordinator.state.topic.replication.factor": str(factor),
                "share.coordinator.state.topic.min.isr": str(min_isr),
            }
        ),
    }
    if plan.secure:
        keystore = kafka_env({broker_keystore_setting(plan): secret_path(BROKER_TARGET)})
        env |= {"SWARMKIT_BROKER_KEYSTORE": "=".join(*keystore.items())}
    service = {
        "image": request.image or DEFAULT_IMAGE,
        "user": START_USER,
        "entrypoint": _named_start("/bin/sh", scripts[-1].target),
        "configs": [config_mount(config) for config in scripts + _tool_configs(plan) + metrics.agent_configs()],
        "environment": BROKER_DEFAULTS | metrics.agent_env() | with_extra_env(request, env),
        "ports": [host_port(plan.external_listener)],
        "networks": [request.network],
        "volumes": [identity_mount(), volume(DATA_VOLUME, DATA_DIR), metrics.agent_mount()],
        "stop_grace_period": STOP_GRACE,
        "deploy": broker_deploy(request),
    }
    return _with_secrets(service, broker_secrets(request))


def broker_secrets(request: StackRequest) -> tuple[SecretFile, ...]:
    return request.security.broker_secrets() if request.security and request.listeners.secure else ()


def controller_secrets(request: StackRequest) -> tuple[SecretFile, ...]:
    plan = request.listeners
    return request.security.controller_secrets(plan.sasl) if request.security and plan.secure else ()


def _with_secrets(service: dict[str, Any], secrets: tuple[SecretFile, ...]) -> dict[str, Any]:
    """The service with its secrets mounted (a plaintext service is left as it is)."""
    return service | {"secrets": [secret_mount(secret) for secret in secrets]} if secrets else service


def _controller(request: StackRequest, controller: Controller) -> dict[str, Any]:
    plan = request.listeners
    env = {
        "KAFKA_NODE_ID": str(controller.node_id),
        "KAFKA_HEAP_OPTS": CONTROLLER_HEAP,
        "KAFKA_JVM_PERFORMANCE_OPTS": CONTROLLER_JVM,
        **_common_env(request, KafkaRole.CONTROLLER),
        **metrics.agent_env(),
    }
    env.update(
        kafka_env(
            CONTROLLER_THREADS
            | CONTROLLER_IDLE
            | CONTROLLER_SESSION
            | CONNECTION_SETUP
            | controller_settings(plan)
            | security_settings(plan, KafkaRole.CONTROLLER)
        )
    )
    start = ("/bin/sh", stack_script(CONTROLLER_SCRIPT).target) if _controller_formats(request) else (IMAGE_START,)
    service: dict[str, Any] = {"image": request.image or DEFAULT_IMAGE, "user": START_USER, "entrypoint": _named_start(*start)}
    if plan.sasl:
        env["SWARMKIT_SCRAM_FILE"] = secret_path(SCRAM_TARGET)
    if controller_set(request).dynamic:
        env["SWARMKIT_INITIAL_CONTROLLERS"] = initial_controllers(
            controller_set(request), request.cluster_id or "", _controller_port(request)
        )
    service["configs"] = [config_mount(config) for config in _controller_configs(request)]
    return _with_secrets(service | _controller_rest(request, env, controller), controller_secrets(request))


def _named_start(*command: str) -> list[str]:
    """The container's command behind local-names.sh, which names its addresses and drops root, and
    metrics-agent.sh, which adds the JMX exporter to the server's KAFKA_OPTS (swarmkit.stack.metrics)."""
    return ["/bin/sh", stack_script(LOCAL_NAMES_SCRIPT).target, *metrics.agent_entrypoint(list(command))]


def _controller_formats(request: StackRequest) -> bool:
    """Whether controllers format their storage themselves (stacks/apache/controller.sh)."""
    return request.listeners.sasl or controller_set(request).dynamic


def _controller_rest(request: StackRequest, env: dict[str, str], controller: Controller) -> dict[str, Any]:
    rest: dict[str, Any] = {"environment": env, "networks": [request.network]}
    if controller_set(request).dynamic:
        rest = {"hostname": controller.service, **rest, "networks": {request.network: {"aliases": [CONTROLLERS_ALIAS]}}}
    return rest | {
        "volumes": [identity_mount(), volume(CONTROLLER_DATA_VOLUME, DATA_DIR), metrics.agent_mount()],
        "stop_grace_period": STOP_GRACE,
        "deploy": {
            "mode": "replicated",
            "replicas": 1,
            "endpoint_mode": "dnsrr",
            "placement": {"constraints": [f"node.hostname == {controller.host}"]},
            "restart_policy": {"condition": "any", "delay": "5s"},
        },
    }


def services(request: StackRequest) -> dict[str, dict[str, Any]]:
    result = {BROKER_SERVICE: _broker(request), metrics.NODE_SERVICE: metrics.node_exporter(request, DATA_VOLUME)}
    for controller in controller_set(request).controllers:
        result[controller.service] = _controller(request, controller)
    return result


def volumes(request: StackRequest) -> tuple[str, ...]:
    return (DATA_VOLUME, CONTROLLER_DATA_VOLUME, metrics.AGENT_VOLUME)


def _broker_scripts(plan: ListenerPlan) -> tuple[ConfigFile, ...]:
    """The broker's scripts, the one it starts with last."""
    scripts = (LOCAL_NAMES_SCRIPT, *ENTRYPOINT_SCRIPTS, *((TLS_BROKER_SCRIPT,) if plan.secure else ()))
    return tuple(stack_script(path) for path in scripts)


def run_tool(engine: Engine, service: str, command: list[str]) -> str:
    """One of Kafka's tools in the service's container on ``engine``, as the user Kafka runs as (the
    container itself starts as root: ``LOCAL_NAMES_SCRIPT``)."""
    return dockerapi.exec_in_service(engine, service, command, user=KAFKA_UID)


def internal_client_config() -> ConfigFile:
    """Kafka tools' ``--command-config`` inside a broker or controller container (the quorum tool,
    reassignment, unregistering): mutual TLS with the mounted internal certificate, paths only."""
    settings = {"security.protocol": "SSL"} | {
        key: value
        for key, value in security_settings(ListenerPlan.build(security="ssl"), KafkaRole.CONTROLLER).items()
        if key != "ssl.client.auth"
    }
    return ConfigFile(INTERNAL_CLIENT_FILE, "".join(f"{key}={value}\n" for key, value in settings.items()))


def _tool_configs(plan: ListenerPlan) -> tuple[ConfigFile, ...]:
    return (internal_client_config(),) if plan.secure else ()


def _controller_configs(request: StackRequest) -> tuple[ConfigFile, ...]:
    plan = request.listeners
    scripts = (LOCAL_NAMES_SCRIPT, CONTROLLER_SCRIPT) if _controller_formats(request) else (LOCAL_NAMES_SCRIPT,)
    return _tool_configs(plan) + tuple(stack_script(path) for path in scripts) + metrics.agent_configs()


def config_files(request: StackRequest) -> tuple[ConfigFile, ...]:
    return tuple(dict.fromkeys(_broker_scripts(request.listeners) + _controller_configs(request)))


def notes(request: StackRequest) -> dict[str, list[str]]:
    result = {
        BROKER_SERVICE: [
            "One broker per node (mode: global). The entrypoint (stacks/apache/entrypoint.sh, sourcing",
            "stacks/node-identity.sh; both mounted from the configs below) reads the node's BROKER_ID from the",
            "identity volume, picks the advertised host (SWARMKIT_ADVERTISE), fills advertised.listeners",
            "and execs the image's start script. Internal address: the task name ({{.Task.Name}}), the",
            "container's name, which Docker's DNS resolves for every container on the overlay: unique per",
            "task, known before start, and needing no name service outside Docker (node hostnames may not",
            "resolve inside containers). A replaced task registers its new name with the controllers.",
        ]
    }
    controllers = controller_set(request)
    kind = "in a dynamic quorum" if controllers.dynamic else "a static quorum voter"
    for c in controllers.controllers:
        result[c.service] = [f"KRaft controller {c.node_id} ({kind}), pinned to manager {c.host}."]
    return result


def network_notes(request: StackRequest) -> list[str]:
    return []
