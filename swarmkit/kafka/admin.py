"""The one adapter over confluent-kafka: ``KafkaAdmin``, one per command and cluster.

It holds the connection settings (a bootstrap address, ``ClientSecurity``: TLS, SCRAM) and one
confluent-kafka admin client, made on the first call and reused by every later one (one TLS handshake
and login per broker per command); the command closes it when it ends (a context manager).  Every
answer is turned into plain data (``answers``) and read by pure functions (``parse``), tested on
answers recorded from a sandbox cluster; every request's futures are settled one way (``_settle``).

Every call is bounded: librdkafka retries a dead or unresolvable address forever unless told
otherwise, so the client gets a short connection timeout and each request its own deadline.
Nothing else in swarmkit imports confluent_kafka (the Spark job talks to Kafka through Spark's own
connector). Failures raise ``BrokerError``; the commands calling in decide what they mean.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from swarmkit import waits
from swarmkit.errors import BrokerError
from swarmkit.fanout import fan_out_settled, first_answer
from swarmkit.kafka import answers, parse
from swarmkit.kafka.parse import (
    BrokerInfo,
    ClusterMetadata,
    PartitionInfo,
    PartitionLag,
    PartitionState,
    TopicInfo,
    TopicResult,
    TopicStatus,
)
from swarmkit.lazy import lazy
from swarmkit.security.acls import Grant
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.topics import TopicSpec, creation_configs

if TYPE_CHECKING:
    import confluent_kafka as ck
    from confluent_kafka import admin as ck_admin
else:
    ck = lazy("confluent_kafka")
    ck_admin = lazy("confluent_kafka.admin")

__all__ = [
    "BrokerInfo",
    "ClusterMetadata",
    "KafkaAdmin",
    "PartitionInfo",
    "PartitionLag",
    "PartitionState",
    "TopicInfo",
    "TopicResult",
    "TopicStatus",
]

CLIENT = ("confluent_kafka.admin",)  # what the first call imports: a caller may import it ahead
DEFAULT_TIMEOUT = 5.0
METADATA_RETRY_S = 2.0  # a fresh client answers well within this unless its request was lost
DELETE_WAIT = 30.0
SCRAM_ITERATIONS = 8192
SECURITY_HINT = "check that the cluster runs in sasl_ssl mode"
K = TypeVar("K")

_QUIET = logging.getLogger("swarmkit.kafka.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class _Client:
    """An AdminClient that keeps librdkafka's complaints for the error message instead of stderr."""

    def __init__(self, bootstrap: str, timeout: float, security: ClientSecurity | None) -> None:
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

    def metadata(self, timeout: float) -> dict[str, Any]:
        """The metadata answer; BrokerError naming librdkafka's last complaint when there is none."""
        try:
            return answers.metadata(self.admin.list_topics(timeout=timeout))
        except ck.KafkaException as exc:
            raise _no_metadata(self.bootstrap, timeout, self.last_error() or exc.args[0].str()) from None


def _no_metadata(bootstrap: str, timeout: float, detail: str) -> BrokerError:
    return BrokerError(
        f"no Kafka metadata from {bootstrap} within {timeout:g}s: {detail}",
        hint="check that the broker runs and that this address and port are reachable from here "
        "(swarmkit listeners diagnose --bootstrap HOST:PORT)",
    )


class KafkaAdmin:
    """One cluster's admin calls for one command, through one client made on first use."""

    def __init__(self, bootstrap: str, security: ClientSecurity | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.bootstrap, self.security, self.timeout = bootstrap, security, timeout
        self._client: _Client | None = None

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the client (librdkafka closes its connections as it goes)."""
        self._client = None

    # --- the client and the one way a request's futures are settled ------------------------------

    def _connected(self) -> tuple[_Client, dict[str, Any]]:
        """The client, made now when there is none, with a fresh metadata answer.

        Since librdkafka 2.10 a client drops its bootstrap connection once a metadata answer lists the
        brokers. When they advertise addresses this machine cannot use (what `listeners diagnose` is
        for), a request still queued on that connection can be lost, so a fresh client asks again every
        couple of seconds while the first keeps waiting (a TLS or SASL refusal can take seconds to come,
        and the first client's complaint is the one reported); the one that answers is kept."""
        if self._client is not None:
            return self._client, self._client.metadata(self.timeout)

        def ask(seconds: float) -> tuple[_Client, dict[str, Any]]:
            client = _Client(self.bootstrap, seconds, self.security)
            return client, client.metadata(seconds)

        try:  # the first attempt's BrokerError names the whole timeout
            self._client, answer = first_answer(ask, self.timeout, METADATA_RETRY_S)
        except TimeoutError:
            raise _no_metadata(self.bootstrap, self.timeout, "no answer") from None
        return self._client, answer

    @property
    def _admin(self) -> ck_admin.AdminClient:
        return (self._client or self._connected()[0]).admin

    def _settle(self, futures: Mapping[K, Any], read: Callable[[Any], Any] = lambda a: a) -> dict[K, Any]:
        """Every future of one request: its answer through ``read``, or ``{"error": …}`` when it failed."""
        settled: dict[K, Any] = {}
        for key, future in futures.items():
            try:
                settled[key] = read(future.result(timeout=self.timeout + 1))
            except ck.KafkaException as error:
                settled[key] = {"error": answers.error(error)}
            except TimeoutError:
                settled[key] = {
                    "error": {"code": None, "name": "TIMED_OUT", "message": f"no answer within {self.timeout + 1:g}s"}
                }
        return settled

    def _one(self, what: str, future: Any, read: Callable[[Any], Any] = lambda a: a, hint: str = "run it again") -> Any:
        """One future's answer through ``read``; BrokerError with ``hint`` when it failed."""
        answer = self._settle({what: future}, read)[what]
        if isinstance(answer, dict) and set(answer) == {"error"}:
            raise parse.failure(what, self.bootstrap, answer["error"], hint)
        return answer

    def _all(self, what: str, futures: Mapping[K, Any], hint: str = "run it again") -> None:
        """Every future of one request; one BrokerError naming each that failed."""
        failed = [f"{getattr(k, 'name', k)}: {a['error']['message']}" for k, a in self._settle(futures).items() if _failed(a)]
        if failed:
            raise BrokerError(f"{what} through {self.bootstrap} failed: {'; '.join(failed)}", hint=hint)

    # --- metadata and partitions --------------------------------------------------------------------

    def metadata(self) -> ClusterMetadata:
        """The cluster's brokers and topics as this bootstrap sees them; BrokerError if it does not answer in time."""
        return parse.cluster_metadata(self.bootstrap, self._connected()[1])

    def partition_states(self) -> tuple[tuple[int, ...], list[PartitionState]]:
        """(registered broker ids, every partition of every topic, internal ones included)."""
        answer = self._connected()[1]
        topics = sorted(t["topic"] for t in answer["topics"])
        return parse.broker_ids(answer), parse.partition_states(answer, parse.min_isr(self.bootstrap, self._described(topics)))

    def _described(self, topics: Sequence[str]) -> dict[str, Any]:
        if not topics:
            return {}
        futures = self._admin.describe_configs(
            [ck_admin.ConfigResource("topic", t) for t in topics], request_timeout=self.timeout
        )
        return {r.name: a for r, a in self._settle(futures, answers.configs).items()}

    def topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """Each topic's effective settings (its own or the broker's defaults), as Kafka reports them."""
        found = {}
        for topic, entries in self._described(topics).items():
            if _failed(entries):
                raise parse.failure(f"reading the settings of topic {topic}", self.bootstrap, entries["error"])
            found[topic] = parse.settings(entries)
        return found

    def broker_racks(self) -> dict[int, str]:
        """Each registered broker's ``broker.rack`` ("" when it has none)."""
        future = self._admin.describe_cluster(request_timeout=self.timeout)
        return parse.racks(self._one("describing the cluster", future, answers.cluster))

    def elect_preferred_leaders(self, partitions: Sequence[tuple[str, int]]) -> list[str]:
        """Hand each partition's leadership to its first replica; returns the partitions that refused (e.g. a
        preferred leader out of sync), as ``topic-partition: why``.  Already-led-by-preferred is not a failure."""
        wanted = [ck.TopicPartition(topic, partition) for topic, partition in partitions]
        # no request_timeout: confluent-kafka 2.16 fails on any keyword here (SystemError); socket.timeout.ms bounds it
        future = self._admin.elect_leaders(ck.ElectionType.PREFERRED, wanted)
        hint = "run it again once every broker is in sync"
        return parse.refused_elections(self._one("preferred leader election", future, answers.elections, hint))

    # --- topics ---------------------------------------------------------------------------------------

    def ensure_topics(self, specs: Sequence[TopicSpec]) -> list[TopicResult]:
        """Create the missing topics; report existing ones as ``exists`` or ``mismatch``, never alter them.

        Raises BrokerError only when the broker does not answer at all."""
        before = self.metadata()
        results = {s.name: _compare(self.bootstrap, s, info) for s in specs if (info := before.topic(s.name))}
        missing = [s for s in specs if s.name not in results]
        if missing:
            new = [ck_admin.NewTopic(s.name, s.partitions, s.replicas, config=creation_configs(s)) for s in missing]
            futures = self._admin.create_topics(new, operation_timeout=self.timeout, request_timeout=self.timeout)
            created = self._settle(futures)
            raced = [
                s for s in missing if _failed(created[s.name]) and created[s.name]["error"]["name"] == "TOPIC_ALREADY_EXISTS"
            ]
            for spec in missing:
                results[spec.name] = parse.created(self.bootstrap, spec, created[spec.name])
            after = self.metadata() if raced else before
            for spec in raced:
                info = after.topic(spec.name)
                results[spec.name] = (
                    _compare(self.bootstrap, spec, info)
                    if info
                    else TopicResult(self.bootstrap, spec.name, "failed", 0, 0, detail="reported as existing but not listed")
                )
        return [results[spec.name] for spec in specs]

    def delete_topic(self, name: str) -> None:
        """Delete a topic and wait until the cluster no longer lists it (deletion is asynchronous)."""
        futures = self._admin.delete_topics([name], operation_timeout=self.timeout, request_timeout=self.timeout)
        self._all("deleting a topic", futures)
        deadline = waits.Deadline(DELETE_WAIT, first=0.2)
        while self.metadata().topic(name) is not None:
            if deadline.passed():
                raise BrokerError(f"topic {name} was still listed {DELETE_WAIT:.0f} s after deletion", hint="run again")
            deadline.sleep()

    def ensure_led_by_every_broker(self, spec: TopicSpec) -> TopicResult:
        """Make a scratch topic (swarmkit's own) whose partitions have a leader on every broker.

        A topic made before a broker joined has no partition led there; since it holds only scratch
        traffic, it is deleted and made again rather than reassigned."""
        metadata = self.metadata()
        found = metadata.topic(spec.name)
        if found is not None:
            leaders = {p.leader for p in found.partitions}
            if leaders >= {b.node_id for b in metadata.brokers} and found.replication_factor == spec.replicas:
                return TopicResult(self.bootstrap, spec.name, "exists", found.partition_count, found.replication_factor)
            self.delete_topic(spec.name)
        deadline = waits.Deadline(DELETE_WAIT)
        while True:
            (result,) = self.ensure_topics([spec])
            if result.status == "created" or deadline.passed():
                return result
            deadline.sleep()  # the deleted topic's name is not free yet

    def alter_topic_configs(self, changes: dict[str, dict[str, str]]) -> None:
        """Set the given settings of each topic (an incremental change: the others stay); brokers apply them live."""
        if not changes:
            return
        set_ = ck_admin.AlterConfigOpType.SET
        resources = [
            ck_admin.ConfigResource(
                "topic",
                topic,
                incremental_configs=[ck_admin.ConfigEntry(k, v, incremental_operation=set_) for k, v in values.items()],
            )
            for topic, values in changes.items()
        ]
        self._all("changing topic settings", self._admin.incremental_alter_configs(resources, request_timeout=self.timeout))

    def add_partitions(self, counts: dict[str, int]) -> None:
        """Grow each topic to ``counts[topic]`` partitions (Kafka places the new replicas, racks considered)."""
        if not counts:
            return
        new = [ck_admin.NewPartitions(topic, count) for topic, count in counts.items()]
        self._all("adding partitions", self._admin.create_partitions(new, request_timeout=self.timeout))

    # --- consumer groups ---------------------------------------------------------------------------

    def consumer_groups(self) -> list[str]:
        future = self._admin.list_consumer_groups(request_timeout=self.timeout)
        return parse.consumer_groups(self.bootstrap, self._one("listing consumer groups", future, answers.groups))

    def consumer_lag(self, groups: Sequence[str] | None = None) -> list[PartitionLag]:
        """Each group's lag on every partition it committed on (all groups when ``groups`` is None)."""
        names = self.consumer_groups() if groups is None else list(groups)
        committed = {g: self.consumer_group_offsets(g) for g in names}
        wanted = sorted({tp for offsets in committed.values() for tp in offsets})
        if not wanted:
            return []
        latest = {ck.TopicPartition(t, p): ck_admin.OffsetSpec.latest() for t, p in wanted}
        ends = parse.log_ends(
            self.bootstrap, answers.offsets(self._settle(self._admin.list_offsets(latest, request_timeout=self.timeout)))
        )
        return [lag for g in names for lag in parse.lag(g, committed[g], ends)]

    def consumer_group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offset per (topic, partition) it committed on; -1 where it has none."""
        futures = self._admin.list_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout)
        return parse.committed(
            self.bootstrap, self._one(f"reading group {group}'s offsets", futures[group], answers.group_offsets)
        )

    # --- security: users and ACLs -------------------------------------------------------------------

    def _bindings(self, user: str) -> list[ck_admin.AclBinding]:
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
        future = self._admin.describe_acls(found, request_timeout=self.timeout)
        return list(self._one(f"listing {user}'s ACLs", future, hint=SECURITY_HINT))

    def user_grants(self, user: str) -> tuple[Grant, ...]:
        """The user's ACLs as grants (those swarmkit can write: allowed, any host, on a topic or a group)."""
        return parse.grants(answers.acl(b) for b in self._bindings(user))

    def set_grants(self, user: str, grants: Sequence[Grant]) -> None:
        """Make ``grants`` the user's whole set of ACLs: the missing ones created, any other one of the user's deleted."""
        wanted = {_binding(user, grant) for grant in grants}
        current = set(self._bindings(user))
        stale = [
            ck_admin.AclBindingFilter(
                b.restype, b.name, b.resource_pattern_type, b.principal, b.host, b.operation, b.permission_type
            )
            for b in current - wanted
        ]
        if stale:
            self._all(f"deleting {user}'s ACLs", self._admin.delete_acls(stale, request_timeout=self.timeout), SECURITY_HINT)
        missing = list(wanted - current)
        if missing:
            self._all(f"granting {user}", self._admin.create_acls(missing, request_timeout=self.timeout), SECURITY_HINT)

    def authorized_topic_operations(self, topics: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """What the client logs in as may do on each topic (``read``, ``write``…), as the brokers' authorizer
        answers it; a topic it may not even describe maps to ``()``.  BrokerError when the login fails."""
        self._connected()  # a refused login or an unreachable broker is an error, not "no rights"
        futures = self._admin.describe_topics(
            ck.TopicCollection(list(topics)), include_authorized_operations=True, request_timeout=self.timeout
        )
        found: dict[str, tuple[str, ...]] = {}
        for topic, answer in self._settle(futures, answers.topic_description).items():
            if _failed(answer) and answer["error"]["name"] != "TOPIC_AUTHORIZATION_FAILED":
                raise parse.failure(f"describing topic {topic}", self.bootstrap, answer["error"])
            found[topic] = () if _failed(answer) else parse.authorized_operations(answer)
        return found

    def set_scram_user(self, user: str, password: str) -> None:
        """Create or change a SCRAM-SHA-512 user (its salted credential goes into the cluster's metadata)."""
        mechanism = ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
        change = ck_admin.UserScramCredentialUpsertion(user, mechanism, password.encode())
        futures = self._admin.alter_user_scram_credentials([change], request_timeout=self.timeout)
        self._one(f"setting user {user}", futures[user], hint=SECURITY_HINT)

    def remove_scram_user(self, user: str) -> None:
        change = ck_admin.UserScramCredentialDeletion(user, ck_admin.ScramMechanism.SCRAM_SHA_512)
        futures = self._admin.alter_user_scram_credentials([change], request_timeout=self.timeout)
        self._one(f"removing user {user}", futures[user], hint=SECURITY_HINT)

    def scram_users(self) -> list[str]:
        """The users the cluster holds SCRAM credentials for."""
        future = self._admin.describe_user_scram_credentials(request_timeout=self.timeout)
        return sorted(self._one("listing users", future, hint=SECURITY_HINT))


def _failed(answer: Any) -> bool:
    return isinstance(answer, dict) and set(answer) == {"error"}


def _compare(bootstrap: str, spec: TopicSpec, info: TopicInfo) -> TopicResult:
    return parse.compared(bootstrap, spec.name, (spec.partitions, spec.replicas), (info.partition_count, info.replication_factor))


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


# --- one call, one client: for callers that make a single call (a command making several holds a KafkaAdmin) --


def broker_metadata(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> ClusterMetadata:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.metadata()


def ensure_topics(
    bootstrap: str, specs: Sequence[TopicSpec], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> list[TopicResult]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.ensure_topics(specs)


def ensure_led_by_every_broker(
    bootstrap: str, spec: TopicSpec, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> TopicResult:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.ensure_led_by_every_broker(spec)


def ensure_topics_on_each(
    bootstraps: Sequence[str],
    specs: Sequence[TopicSpec],
    timeout: float = DEFAULT_TIMEOUT,
    security: ClientSecurity | None = None,
) -> list[TopicResult]:
    """``ensure_topics`` on every broker in parallel, for engines whose brokers share no storage.

    Every broker is tried; if any does not answer, one BrokerError names them all."""
    outcomes = fan_out_settled(lambda bootstrap: ensure_topics(bootstrap, specs, timeout, security), bootstraps, BrokerError)
    results = [result for outcome in outcomes if not isinstance(outcome, BrokerError) for result in outcome]
    failures = [outcome.message for outcome in outcomes if isinstance(outcome, BrokerError)]
    if failures:
        raise BrokerError(
            "; ".join(failures),
            hint="topics were ensured on the other brokers; fix this one and run again (creation is idempotent)",
        )
    return results


def partition_states(
    bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> tuple[tuple[int, ...], list[PartitionState]]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.partition_states()


def elect_preferred_leaders(
    bootstrap: str, partitions: Sequence[tuple[str, int]], timeout: float = 30.0, security: ClientSecurity | None = None
) -> list[str]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.elect_preferred_leaders(partitions)


def topic_configs(
    bootstrap: str, topics: Sequence[str], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> dict[str, dict[str, str]]:
    if not topics:
        return {}
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.topic_configs(topics)


def alter_topic_configs(
    bootstrap: str, changes: dict[str, dict[str, str]], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> None:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        kafka.alter_topic_configs(changes)


def add_partitions(
    bootstrap: str, counts: dict[str, int], timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> None:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        kafka.add_partitions(counts)


def broker_racks(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> dict[int, str]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.broker_racks()


def user_grants(bootstrap: str, user: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> tuple[Grant, ...]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.user_grants(user)


def set_grants(
    bootstrap: str, user: str, grants: Sequence[Grant], security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT
) -> None:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        kafka.set_grants(user, grants)


def authorized_topic_operations(
    bootstrap: str, topics: Sequence[str], security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, tuple[str, ...]]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.authorized_topic_operations(topics)


def set_scram_user(bootstrap: str, user: str, password: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> None:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        kafka.set_scram_user(user, password)


def remove_scram_user(bootstrap: str, user: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> None:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        kafka.remove_scram_user(user)


def scram_users(bootstrap: str, security: ClientSecurity, timeout: float = DEFAULT_TIMEOUT) -> list[str]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.scram_users()


def consumer_lag(
    bootstrap: str, groups: Sequence[str] | None = None, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> list[PartitionLag]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.consumer_lag(groups)
