"""The one adapter over confluent-kafka: metadata and topic creation, plain data in and out.

Every call is bounded: librdkafka retries a dead or unresolvable address forever unless told
otherwise, so each client gets a short connection timeout and each request its own deadline.
A secure cluster's clients pass ``security`` (``ClientSecurity``: TLS, SCRAM) to every call.
Nothing else in swarmkit imports confluent_kafka (the Spark job talks to Kafka through Spark's
own connector). Failures raise ``BrokerError``; the commands calling in decide what they mean.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import confluent_kafka as ck
from confluent_kafka import admin as ck_admin

from swarmkit import waits
from swarmkit.errors import BrokerError
from swarmkit.fanout import fan_out_settled, first_answer
from swarmkit.security.acls import Grant
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.topics import TopicSpec, creation_configs

DEFAULT_TIMEOUT = 5.0
METADATA_RETRY_S = 2.0  # a fresh client answers well within this unless its request was lost
DELETE_WAIT = 30.0
SCRAM_ITERATIONS = 8192

_QUIET = logging.getLogger("swarmkit.kafka.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    error: str = ""

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class ClusterMetadata:
    """What one bootstrap address says about its cluster (the ``kafkacat -L`` view)."""

    bootstrap: str
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicInfo, ...]

    def broker(self, node_id: int) -> BrokerInfo | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    def broker_at(self, endpoint: str) -> BrokerInfo | None:
        return next((b for b in self.brokers if b.endpoint == endpoint), None)

    def topic(self, name: str) -> TopicInfo | None:
        return next((t for t in self.topics if t.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for topic, info in zip(data["topics"], self.topics):
            topic["partition_count"] = info.partition_count
            topic["replication_factor"] = info.replication_factor
        return data


TopicStatus = Literal["created", "exists", "mismatch", "failed"]


@dataclass(frozen=True)
class TopicResult:
    """The outcome of ensuring one topic on one bootstrap; a mismatch is reported, never altered."""

    bootstrap: str
    name: str
    status: TopicStatus
    partitions: int
    replicas: int
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("created", "exists")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


class _Client:
    """An ck_admin.AdminClient that keeps librdkafka's complaints for the error message instead of stderr."""

    def __init__(self, bootstrap: str, timeout: float, security: ClientSecurity | None = None) -> None:
        self.bootstrap = bootstrap
        self.errors: list[str] = []
        ms = max(int(timeout * 1000), 1000)
        config: dict[str, Any] = {  # the stubs allow only plain values; logger and error_cb are real settings
            "bootstrap.servers": bootstrap,
            "socket.connection.setup.timeout.ms": ms,
            "socket.timeout.ms": ms,
            "reconnect.backoff.max.ms": 1000,
            "logger": _QUIET,
            "error_cb": self._on_error,
        }
        config |= security.librdkafka() if security else {}
        self.admin = ck_admin.AdminClient(config)

    def _on_error(self, error: ck.KafkaError) -> None:
        """Keep librdkafka's complaint; "all brokers are down" only when nothing said why."""
        if error.code() != ck.KafkaError._ALL_BROKERS_DOWN or not self.errors:
            self.errors.append(error.str())

    def last_error(self) -> str:
        self.admin.poll(0)
        return self.errors[-1] if self.errors else ""


def _no_metadata(bootstrap: str, timeout: float, detail: str) -> BrokerError:
    return BrokerError(
        f"no Kafka metadata from {bootstrap} within {timeout:g}s: {detail}",
        hint="check that the broker runs and that this address and port are reachable from here "
        "(swarmkit listeners diagnose --bootstrap HOST:PORT)",
    )


def _list_topics(client: _Client, timeout: float) -> Any:
    """The raw metadata answer; BrokerError naming librdkafka's last complaint when there is none."""
    try:
        return client.admin.list_topics(timeout=timeout)
    except ck.KafkaException as exc:
        raise _no_metadata(client.bootstrap, timeout, client.last_error() or exc.args[0].str()) from None


def _metadata(client: _Client, timeout: float) -> ClusterMetadata:
    raw = _list_topics(client, timeout)
    brokers = tuple(BrokerInfo(b.id, b.host, b.port) for b in sorted(raw.brokers.values(), key=lambda b: b.id))
    topics = tuple(
        TopicInfo(
            name=t.topic,
            partitions=tuple(
                PartitionInfo(p.id, p.leader, tuple(p.replicas)) for p in sorted(t.partitions.values(), key=lambda p: p.id)
            ),
            error=t.error.str() if t.error else "",
        )
        for t in sorted(raw.topics.values(), key=lambda t: t.topic)
        if not t.topic.startswith("__")  # internal topics (__consumer_offsets) are not the user's
    )
    return ClusterMetadata(client.bootstrap, raw.cluster_id, raw.controller_id, brokers, topics)


def broker_metadata(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> ClusterMetadata:
    """Ask one bootstrap address for cluster metadata; BrokerError if it does not answer in time.

    Since librdkafka 2.10 a client drops its bootstrap connection once a metadata answer lists the
    brokers. When they advertise addresses this machine cannot use (what `listeners diagnose` is
    for), a request still queued on that connection can be lost, so a fresh client asks again every
    couple of seconds while the first keeps waiting (a TLS or SASL refusal can take seconds to come,
    and the first client's complaint is the one reported).
    """

    def ask(seconds: float) -> ClusterMetadata:
        return _metadata(_Client(bootstrap, seconds, security), seconds)

    try:
        return first_answer(ask, timeout, METADATA_RETRY_S)  # the first attempt's BrokerError names the whole timeout
    except TimeoutError:
        raise _no_metadata(bootstrap, timeout, "no answer") from None


def _compare(bootstrap: str, spec: TopicSpec, info: TopicInfo) -> TopicResult:
    actual = (info.partition_count, info.replication_factor)
    if actual == (spec.partitions, spec.replicas):
        return TopicResult(bootstrap, spec.name, "exists", *actual)
    return TopicResult(
        bootstrap,
        spec.name,
        "mismatch",
        *actual,
        detail=f"exists with {actual[0]} partitions x {actual[1]} replicas, spec asks "
        f"{spec.partitions} x {spec.replicas}; left unchanged (alter or delete it by hand)",
    )


def ensure_topics(
    bootstrap: str, specs: Sequence[TopicSpec], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> list[TopicResult]:
    """Create the missing topics; report existing ones as ``exists`` or ``mismatch``, never alter them.

    Raises BrokerError only when the broker does not answer at all.
    """
    client = _Client(bootstrap, timeout, security)
    before = _metadata(client, timeout)
    results: dict[str, TopicResult] = {}
    missing: list[TopicSpec] = []
    for spec in specs:
        info = before.topic(spec.name)
        if info is None:
            missing.append(spec)
        else:
            results[spec.name] = _compare(bootstrap, spec, info)
    if missing:
        futures = client.admin.create_topics(
            [ck_admin.NewTopic(s.name, s.partitions, s.replicas, config=creation_configs(s)) for s in missing],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        raced: list[TopicSpec] = []
        for spec in missing:
            try:
                futures[spec.name].result(timeout=timeout + 1)
                results[spec.name] = TopicResult(bootstrap, spec.name, "created", spec.partitions, spec.replicas)
            except ck.KafkaException as exc:
                err: ck.KafkaError = exc.args[0]
                if err.code() == ck.KafkaError.TOPIC_ALREADY_EXISTS:
                    raced.append(spec)
                else:
                    results[spec.name] = TopicResult(bootstrap, spec.name, "failed", 0, 0, detail=err.str())
            except TimeoutError:
                results[spec.name] = TopicResult(
                    bootstrap, spec.name, "failed", 0, 0, detail=f"no answer to CreateTopics within {timeout:g}s"
                )
        if raced:
            after = _metadata(client, timeout)
            for spec in raced:
                info = after.topic(spec.name)
                results[spec.name] = (
                    _compare(bootstrap, spec, info)
                    if info
                    else TopicResult(bootstrap, spec.name, "failed", 0, 0, detail="reported as existing but not listed")
                )
    return [results[spec.name] for spec in specs]


def _delete_topic(client: _Client, name: str, timeout: float) -> None:
    """Delete a topic and wait until the cluster no longer lists it (deletion is asynchronous)."""
    future = client.admin.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name]
    future.result(timeout=timeout + 1)
    deadline = waits.Deadline(DELETE_WAIT, first=0.2, longest=1.0)
    while _metadata(client, timeout).topic(name) is not None:
        if deadline.passed():
            raise BrokerError(f"topic {name} was still listed {DELETE_WAIT:.0f} s after deletion", hint="run again")
        deadline.sleep()


def ensure_led_by_every_broker(
    bootstrap: str, spec: TopicSpec, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> TopicResult:
    """Make a scratch topic (swarmkit's own) whose partitions have a leader on every broker.

    A topic made before a broker joined has no partition led there; since it holds only scratch
    traffic, it is deleted and made again rather than reassigned."""
    client = _Client(bootstrap, timeout, security)
    metadata = _metadata(client, timeout)
    found = metadata.topic(spec.name)
    brokers = {b.node_id for b in metadata.brokers}
    if found is not None:
        leaders = {p.leader for p in found.partitions}
        if leaders >= brokers and found.replication_factor == spec.replicas:
            return TopicResult(bootstrap, spec.name, "exists", found.partition_count, found.replication_factor)
        _delete_topic(client, spec.name, timeout)
    deadline = waits.Deadline(DELETE_WAIT)
    while True:
        (result,) = ensure_topics(bootstrap, [spec], timeout, security)
        if result.status == "created" or deadline.passed():
            return result
        deadline.sleep()  # the deleted topic's name is not free yet


def ensure_topics_on_each(
    bootstraps: Sequence[str],
    specs: Sequence[TopicSpec],
    timeout: float = DEFAULT_TIMEOUT,
    security: ClientSecurity | None = None,
) -> list[TopicResult]:
    """``ensure_topics`` on every broker in parallel, for engines whose brokers share no storage.

    Every broker is tried; if any does not answer, one BrokerError names them all.
    """
    outcomes = fan_out_settled(lambda bootstrap: ensure_topics(bootstrap, specs, timeout, security), bootstraps, BrokerError)
    results = [result for outcome in outcomes if not isinstance(outcome, BrokerError) for result in outcome]
    failures = [outcome.message for outcome in outcomes if isinstance(outcome, BrokerError)]
    if failures:
        raise BrokerError(
            "; ".join(failures),
            hint="topics were ensured on the other brokers; fix this one and run again (creation is idempotent)",
        )
    return results


@dataclass(frozen=True)
class PartitionState:
    """One partition as the controller sees it: who leads, who holds a copy, who is in sync."""

    topic: str
    partition: int
    leader: int  # -1: no leader (offline)
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        """acks=all producers are refused (NOT_ENOUGH_REPLICAS) until the ISR grows back."""
        return len(self.isr) < self.min_isr


def _min_isr_by_topic(client: _Client, topics: Sequence[str], timeout: float) -> dict[str, int]:
    """Each topic's effective ``min.insync.replicas`` (its own setting or the broker default)."""
    if not topics:
        return {}
    futures = client.admin.describe_configs([ck_admin.ConfigResource("topic", t) for t in topics], request_timeout=timeout)
    found: dict[str, int] = {}
    for resource, future in futures.items():
        try:
            entry = future.result(timeout=timeout + 1).get("min.insync.replicas")
        except (ck.KafkaException, TimeoutError):
            continue
        if entry is not None and entry.value is not None:
            found[resource.name] = int(entry.value)
    return found


def partition_states(
    bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> tuple[tuple[int, ...], list[PartitionState]]:
    """(registered broker ids, every partition of every topic, internal ones included).

    BrokerError when the bootstrap does not answer."""
    client = _Client(bootstrap, timeout, security)
    raw = _list_topics(client, timeout)
    min_isr = _min_isr_by_topic(client, sorted(raw.topics), timeout)
    states = [
        PartitionState(t.topic, p.id, p.leader, tuple(p.replicas), tuple(p.isrs), min_isr.get(t.topic, 1))
        for t in sorted(raw.topics.values(), key=lambda t: t.topic)
        for p in sorted(t.partitions.values(), key=lambda p: p.id)
    ]
    return tuple(sorted(raw.brokers)), states


def elect_preferred_leaders(
    bootstrap: str, partitions: Sequence[tuple[str, int]], timeout: float = 30.0, security: ClientSecurity | None = None
) -> list[str]:
    """Hand each partition's leadership to its first replica; returns the partitions that refused (e.g. a
    preferred leader out of sync), as ``topic-partition: why``.  Already-led-by-preferred is not a failure."""
    client = _Client(bootstrap, timeout, security)
    wanted = [ck.TopicPartition(topic, partition) for topic, partition in partitions]
    try:
        # no request_timeout: confluent-kafka 2.16 fails on any keyword here (SystemError); socket.timeout.ms bounds it
        results = client.admin.elect_leaders(ck.ElectionType.PREFERRED, wanted).result(timeout=timeout + 5)
    except (ck.KafkaException, TimeoutError) as error:
        raise BrokerError(
            f"preferred leader election through {bootstrap} failed: {error}", hint="run it again once every broker is in sync"
        ) from None
    return [
        f"{tp.topic}-{tp.partition}: {error}"
        for tp, error in results.items()
        if error is not None and _error_code(error) != ck.KafkaError.ELECTION_NOT_NEEDED
    ]


def _error_code(error: ck.KafkaError | ck.KafkaException) -> int:
    """Per-partition results come as a ck.KafkaError (seen with 2.16) or, as documented, a ck.KafkaException."""
    return int((error.args[0] if isinstance(error, ck.KafkaException) else error).code())


def _security_call(client: _Client, what: str, future: Any, timeout: float) -> Any:
    try:
        return future.result(timeout=timeout + 1)
    except (ck.KafkaException, TimeoutError) as error:
        raise BrokerError(
            f"{what} through {client.bootstrap} failed: {error}", hint="check that the cluster runs in sasl_ssl mode"
        ) from None


def _binding(user: str, grant: Grant) -> ck_admin.AclBinding:
    """The Kafka ACL of one grant: allow ``User:user`` the operation from any host."""
    return ck_admin.AclBinding(
        ck_admin.ResourceType[grant.resource.upper()],
        grant.name,
        ck_admin.ResourcePatternType.PREFIXED if grant.prefixed else ck_admin.ResourcePatternType.LITERAL,
        f"User:{user}",
        "*",
        ck_admin.AclOperation[grant.operation.replace("-", "_").upper()],
        ck_admin.AclPermissionType.ALLOW,
    )


def _bindings(client: _Client, user: str, timeout: float) -> list[ck_admin.AclBinding]:
    anything: Any = None  # a filter's None matches any name and host (the stubs allow only str)
    found = ck_admin.AclBindingFilter(
        ck_admin.ResourceType.ANY,
        anything,
        ck_admin.ResourcePatternType.ANY,
        f"User:{user}",
        anything,
        ck_admin.AclOperation.ANY,
        ck_admin.AclPermissionType.ANY,
    )
    return list(
        _security_call(client, f"listing {user}'s ACLs", client.admin.describe_acls(found, request_timeout=timeout), timeout)
    )


def _lower(value: object) -> str:
    """An enum member's name as grants spell it (AclOperation.DESCRIBE_CONFIGS: describe-configs)."""
    return str(getattr(value, "name", value)).lower().replace("_", "-")


def _as_grant(binding: ck_admin.AclBinding) -> Grant:
    prefixed = binding.resource_pattern_type == ck_admin.ResourcePatternType.PREFIXED
    return Grant(_lower(binding.restype), binding.name, prefixed, _lower(binding.operation))


def user_grants(bootstrap: str, user: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> tuple[Grant, ...]:
    """The user's ACLs as grants (those swarmkit can write: allowed, any host, on a topic or a group)."""
    bindings = _bindings(_Client(bootstrap, timeout, security), user, timeout)
    mine = [b for b in bindings if b.permission_type == ck_admin.AclPermissionType.ALLOW and b.host == "*"]
    return tuple(sorted(_as_grant(b) for b in mine if b.restype in (ck_admin.ResourceType.TOPIC, ck_admin.ResourceType.GROUP)))


def set_grants(
    bootstrap: str, user: str, grants: Sequence[Grant], security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT
) -> None:
    """Make ``grants`` the user's whole set of ACLs: the missing ones created, any other one of the user's deleted."""
    client = _Client(bootstrap, timeout, security)
    wanted = {_binding(user, grant) for grant in grants}
    current = set(_bindings(client, user, timeout))
    stale = [
        ck_admin.AclBindingFilter(b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type)
        for b in current - wanted
    ]
    if stale:
        for future in client.admin.delete_acls(stale, request_timeout=timeout).values():
            _security_call(client, f"deleting {user}'s ACLs", future, timeout)
    missing = list(wanted - current)
    if missing:
        for future in client.admin.create_acls(missing, request_timeout=timeout).values():
            _security_call(client, f"granting {user}", future, timeout)


def authorized_topic_operations(
    bootstrap: str, topics: Sequence[str], security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, tuple[str, ...]]:
    """What the client ``security`` logs in as may do on each topic (``read``, ``write``…), as the brokers'
    authorizer answers it; a topic it may not even describe maps to ``()``.  BrokerError when the login fails."""
    client = _Client(bootstrap, timeout, security)
    _list_topics(client, timeout)  # a refused login or an unreachable broker is an error, not "no rights"
    futures = client.admin.describe_topics(
        ck.TopicCollection(list(topics)), include_authorized_operations=True, request_timeout=timeout
    )
    found: dict[str, tuple[str, ...]] = {}
    for topic, future in futures.items():
        try:
            operations = future.result(timeout=timeout + 1).authorized_operations or []
        except ck.KafkaException as error:
            if _error_code(error) != ck.KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise BrokerError(f"describing topic {topic} through {bootstrap} failed: {error}", hint="run it again") from None
            operations = []
        found[topic] = tuple(sorted(_lower(op) for op in operations))
    return found


def set_scram_user(bootstrap: str, user: str, password: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Create or change a SCRAM-SHA-512 user (its salted credential goes into the cluster's metadata)."""
    client = _Client(bootstrap, timeout, security)
    change = ck_admin.UserScramCredentialUpsertion(
        user, ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS), password.encode()
    )
    futures = client.admin.alter_user_scram_credentials([change], request_timeout=timeout)
    _security_call(client, f"setting user {user}", futures[user], timeout)


def remove_scram_user(bootstrap: str, user: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> None:
    client = _Client(bootstrap, timeout, security)
    futures = client.admin.alter_user_scram_credentials(
        [ck_admin.UserScramCredentialDeletion(user, ck_admin.ScramMechanism.SCRAM_SHA_512)], request_timeout=timeout
    )
    _security_call(client, f"removing user {user}", futures[user], timeout)


def scram_users(bootstrap: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    """The users the cluster holds SCRAM credentials for."""
    client = _Client(bootstrap, timeout, security)
    found = _security_call(
        client, "listing users", client.admin.describe_user_scram_credentials(request_timeout=timeout), timeout
    )
    return sorted(found)


def _settled(client: _Client, what: str, futures: dict[Any, Any], timeout: float) -> None:
    """Wait for every future of one admin request; BrokerError naming each one that failed."""
    failed = []
    for key, future in futures.items():
        try:
            future.result(timeout=timeout + 1)
        except (ck.KafkaException, TimeoutError) as error:
            failed.append(f"{getattr(key, 'name', key)}: {error}")
    if failed:
        raise BrokerError(f"{what} through {client.bootstrap} failed: {'; '.join(failed)}", hint="run it again")


def topic_configs(
    bootstrap: str, topics: Sequence[str], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> dict[str, dict[str, str]]:
    """Each topic's effective settings (its own or the broker's defaults), as Kafka reports them."""
    if not topics:
        return {}
    client = _Client(bootstrap, timeout, security)
    futures = client.admin.describe_configs([ck_admin.ConfigResource("topic", t) for t in topics], request_timeout=timeout)
    found: dict[str, dict[str, str]] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(timeout=timeout + 1)
        except (ck.KafkaException, TimeoutError) as error:
            raise BrokerError(f"reading the settings of topic {resource.name} failed: {error}", hint="run it again") from None
        found[resource.name] = {name: entry.value for name, entry in entries.items() if entry.value is not None}
    return found


def alter_topic_configs(
    bootstrap: str, changes: dict[str, dict[str, str]], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> None:
    """Set the given settings of each topic (an incremental change: the others stay); brokers apply them live."""
    if not changes:
        return
    client = _Client(bootstrap, timeout, security)
    resources = [
        ck_admin.ConfigResource(
            "topic",
            topic,
            incremental_configs=[
                ck_admin.ConfigEntry(key, value, incremental_operation=ck_admin.AlterConfigOpType.SET)
                for key, value in settings.items()
            ],
        )
        for topic, settings in changes.items()
    ]
    futures = client.admin.incremental_alter_configs(resources, request_timeout=timeout)
    _settled(client, "changing topic settings", futures, timeout)


def add_partitions(
    bootstrap: str, counts: dict[str, int], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> None:
    """Grow each topic to ``counts[topic]`` partitions (Kafka places the new replicas, racks considered)."""
    if not counts:
        return
    client = _Client(bootstrap, timeout, security)
    futures = client.admin.create_partitions(
        [ck_admin.NewPartitions(topic, count) for topic, count in counts.items()], request_timeout=timeout
    )
    _settled(client, "adding partitions", futures, timeout)


def broker_racks(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> dict[int, str]:
    """Each registered broker's ``broker.rack`` ("" when it has none)."""
    client = _Client(bootstrap, timeout, security)
    try:
        described = client.admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 1)
    except (ck.KafkaException, TimeoutError) as error:
        raise BrokerError(f"describing the cluster through {bootstrap} failed: {error}", hint="run it again") from None
    return {node.id: node.rack or "" for node in described.nodes}
