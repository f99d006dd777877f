"""The one adapter over confluent-kafka: ``KafkaAdmin``, one per command and cluster.

It holds the connection settings (a bootstrap address, ``ClientSecurity``: TLS, SCRAM) and one admin
client, made on the first request and reused by every later one (one TLS handshake and login per broker
per command); the command closes it when it ends (``with KafkaAdmin(...) as kafka:``).  Every answer is
turned into plain data (``answers``) and read by pure functions (``parse``), tested on answers recorded
from a sandbox cluster; every request's futures are settled one way (``_settle``), and no error is
dropped: each is raised as a ``BrokerError`` with a hint, or reported in what is returned.

Every call is bounded: librdkafka retries a dead or unresolvable address forever unless told
otherwise, so the client gets a short connection timeout and each request its own deadline.
Nothing else in swarmkit imports confluent_kafka (the Spark job talks to Kafka through Spark's
own connector). The module functions below are one-request shorthands for a command that needs one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import confluent_kafka as ck
from confluent_kafka import admin as ck_admin

from swarmkit import waits
from swarmkit.errors import BrokerError
from swarmkit.fanout import fan_out_settled, first_answer
from swarmkit.kafka import answers, parse
from swarmkit.kafka.models import BrokerInfo, ClusterMetadata, PartitionInfo, PartitionState, TopicInfo, TopicResult, TopicStatus
from swarmkit.security.acls import Grant
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.topics import TopicSpec, creation_configs

__all__ = [
    "BrokerInfo",
    "ClusterMetadata",
    "KafkaAdmin",
    "PartitionInfo",
    "PartitionState",
    "TopicInfo",
    "TopicResult",
    "TopicStatus",
]

DEFAULT_TIMEOUT = 5.0
METADATA_RETRY_S = 2.0  # a fresh client answers well within this unless its request was lost
DELETE_WAIT = 30.0
CREATE_RETRY_S = 30.0  # well within what Kafka's own admin client retries for (default.api.timeout.ms, 60 s)
SCRAM_ITERATIONS = 8192
LOCAL_TIMEOUT = "_TIMED_OUT"  # librdkafka gave up before a broker answered ("Timed out waiting for controller")
SECURITY_HINT = "check that the cluster runs in sasl_ssl mode"
K = TypeVar("K")

_QUIET = logging.getLogger("swarmkit.kafka.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class _Client:
    """An AdminClient that keeps librdkafka's complaints for the error message instead of stderr."""

    def __init__(self, bootstrap: str, timeout: float, security: ClientSecurity | None) -> None:
        self.bootstrap = bootstrap
        self.errors: list[answers.Answer] = []
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
        """Keep librdkafka's complaints for the error message instead of its stderr."""
        self.errors.append(answers.error(error))

    def last_error(self) -> str:
        self.admin.poll(0)
        return parse.complaint(self.errors)

    def named_controller(self) -> str:
        """The broker this client's admin requests wait for, as a fresh metadata answer names it."""
        try:
            return parse.named_controller(self.metadata(METADATA_RETRY_S))
        except BrokerError as error:
            return error.message

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
    """One cluster's admin requests for one command, through one client made on first use and kept until
    ``close`` (one thread uses it: a fan-out over brokers makes one per broker)."""

    def __init__(self, bootstrap: str, security: ClientSecurity | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.bootstrap, self.security, self.timeout = bootstrap, security, timeout
        self._client: _Client | None = None

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop the client: librdkafka closes its connections as it is destroyed."""
        self._client = None

    # --- the client, and the one way a request's futures are settled ---------------------------------

    def _metadata_answer(self) -> dict[str, Any]:
        """A fresh metadata answer, through the client (made now when there is none).

        Since librdkafka 2.10 a client drops its bootstrap connection once a metadata answer lists the
        brokers. When they advertise addresses this machine cannot use (what `listeners diagnose` is
        for), a request still queued on that connection can be lost, so a fresh client asks again every
        couple of seconds while the first keeps waiting (a TLS or SASL refusal can take seconds to come,
        and the first client's complaint is the one reported); the client that answers is kept."""
        if self._client is not None:
            return self._client.metadata(self.timeout)

        def ask(seconds: float) -> tuple[_Client, dict[str, Any]]:
            client = _Client(self.bootstrap, seconds, self.security)
            return client, client.metadata(seconds)

        try:  # the first attempt's BrokerError names the whole timeout
            self._client, answer = first_answer(ask, self.timeout, METADATA_RETRY_S)
        except TimeoutError:
            raise _no_metadata(self.bootstrap, self.timeout, "no answer") from None
        return answer

    @property
    def _admin(self) -> ck_admin.AdminClient:
        if self._client is None:
            self._metadata_answer()  # a refused login or an unreachable broker is named here, with its hint
        assert self._client is not None
        return self._client.admin

    def _settle(self, futures: Mapping[K, Any], read: Callable[[Any], Any] = answers.same, wait: float = 0) -> dict[K, Any]:
        """Every future of one request: its answer through ``read``, or ``{"error": …}`` when it failed."""
        seconds = wait or self.timeout + 1
        settled: dict[K, Any] = {}
        for key, future in futures.items():
            try:
                settled[key] = read(future.result(timeout=seconds))
            except ck.KafkaException as error:
                settled[key] = {"error": answers.error(error)}
            except TimeoutError:
                settled[key] = answers.timed_out(seconds)
        return settled

    def _one(self, what: str, future: Any, read: Callable[[Any], Any] = answers.same, hint: str = parse.RETRY) -> Any:
        """One future's answer through ``read``; BrokerError with ``hint`` when it failed."""
        return parse.checked(what, self.bootstrap, self._settle({what: future}, read)[what], hint)

    def _all(self, what: str, futures: Mapping[Any, Any], hint: str = parse.RETRY) -> None:
        """Every future of one request; one BrokerError naming each that failed."""
        settled = self._settle(futures, answers.nothing)
        failed = [f"{getattr(k, 'name', k)}: {a['error']['message']}" for k, a in settled.items() if parse.failed(a)]
        if failed:
            raise BrokerError(f"{what} through {self.bootstrap} failed: {'; '.join(failed)}", hint=hint)

    # --- metadata, partitions and settings ------------------------------------------------------------

    def metadata(self) -> ClusterMetadata:
        """The cluster's brokers and topics as this bootstrap sees them; BrokerError if it does not answer in time."""
        return parse.cluster_metadata(self.bootstrap, self._metadata_answer())

    def partition_states(self) -> tuple[tuple[int, ...], list[PartitionState]]:
        """(registered broker ids, every partition of every topic, internal ones included), each with its topic's
        effective ``min.insync.replicas``; BrokerError when any of these cannot be read."""
        answer = self._metadata_answer()
        min_isr = parse.min_isr(self.bootstrap, self._configs(parse.topic_names(answer)))
        return parse.broker_ids(answer), parse.partition_states(answer, min_isr)

    def _configs(self, topics: Sequence[str]) -> dict[str, Any]:
        if not topics:
            return {}
        resources = [ck_admin.ConfigResource("topic", t) for t in topics]
        futures = self._admin.describe_configs(resources, request_timeout=self.timeout)
        return {resource.name: answer for resource, answer in self._settle(futures, answers.configs).items()}

    def topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """Each topic's effective settings (its own or the broker's defaults), as Kafka reports them."""
        return {
            topic: parse.settings(parse.checked(f"reading the settings of topic {topic}", self.bootstrap, answer))
            for topic, answer in self._configs(topics).items()
        }

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        """Set the given settings of each topic (an incremental change: the others stay); brokers apply them live."""
        if not changes:
            return
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
        self._all("changing topic settings", self._admin.incremental_alter_configs(resources, request_timeout=self.timeout))

    def add_partitions(self, counts: Mapping[str, int]) -> None:
        """Grow each topic to ``counts[topic]`` partitions (Kafka places the new replicas, racks considered)."""
        if not counts:
            return
        wanted = [ck_admin.NewPartitions(topic, count) for topic, count in counts.items()]
        self._all("adding partitions", self._admin.create_partitions(wanted, request_timeout=self.timeout))

    def broker_racks(self) -> dict[int, str]:
        """Each registered broker's ``broker.rack`` ("" when it has none)."""
        future = self._admin.describe_cluster(request_timeout=self.timeout)
        return parse.racks(self._one("describing the cluster", future, answers.cluster))

    def elect_preferred_leaders(self, partitions: Sequence[tuple[str, int]], timeout: float = 30.0) -> list[str]:
        """Hand each partition's leadership to its first replica; returns the partitions that refused (e.g. a
        preferred leader out of sync), as ``topic-partition: why``.  Already-led-by-preferred is not a failure."""
        wanted = [ck.TopicPartition(topic, partition) for topic, partition in partitions]
        # no request_timeout: confluent-kafka 2.16 fails on any keyword here (SystemError); socket.timeout.ms bounds it
        futures = {"election": self._admin.elect_leaders(ck.ElectionType.PREFERRED, wanted)}
        answer = self._settle(futures, answers.elections, wait=timeout + 5)["election"]
        hint = "run it again once every broker is in sync"
        return parse.refused_elections(parse.checked("preferred leader election", self.bootstrap, answer, hint))

    # --- topics ---------------------------------------------------------------------------------------

    def ensure_topics(self, specs: Sequence[TopicSpec]) -> list[TopicResult]:
        """Create the missing topics; report existing ones as ``exists`` or ``mismatch``, never alter them.

        Raises BrokerError only when the broker does not answer at all."""
        before = self.metadata()
        results = {s.name: parse.compared(self.bootstrap, s, info) for s in specs if (info := before.topic(s.name))}
        missing = [s for s in specs if s.name not in results]
        if missing:
            results |= self._create(missing)
        return [results[spec.name] for spec in specs]

    def _create(self, specs: Sequence[TopicSpec]) -> dict[str, TopicResult]:
        """Create topics, sending again for up to CREATE_RETRY_S those Kafka says may pass then (a quorum electing
        its leader; a broker not reached in time, asked again through a fresh client); one another client made
        meanwhile (TOPIC_ALREADY_EXISTS, also our own earlier try) is compared to its spec."""
        settled: dict[str, Any] = {}

        def attempt() -> None | waits.NotYet:
            pending = [s for s in specs if s.name not in settled or parse.retriable(settled[s.name])]
            new = [ck_admin.NewTopic(s.name, s.partitions, s.replicas, config=creation_configs(s)) for s in pending]
            futures = self._admin.create_topics(new, operation_timeout=self.timeout, request_timeout=self.timeout)
            settled.update(self._settle(futures, answers.nothing))
            retried = [s.name for s in specs if parse.retriable(settled[s.name])]
            self._drop_if_stuck([settled[name] for name in retried])
            return waits.NotYet(", ".join(retried)) if retried else None

        waits.until(attempt, CREATE_RETRY_S)
        results = {spec.name: parse.created(self.bootstrap, spec, settled[spec.name]) for spec in specs}
        raced = [spec for spec in specs if parse.error_name(settled[spec.name]) == "TOPIC_ALREADY_EXISTS"]
        after = self.metadata() if raced else None
        for spec in raced:
            info = after.topic(spec.name) if after else None
            results[spec.name] = (
                parse.compared(self.bootstrap, spec, info)
                if info
                else TopicResult(self.bootstrap, spec.name, "failed", 0, 0, detail="reported as existing but not listed")
            )
        return results

    def _drop_if_stuck(self, failures: Sequence[Any]) -> None:
        """A client that timed out waiting on the one broker its metadata named controller is dropped (fresh metadata
        may name another); librdkafka's complaint and the broker its metadata names now are added to each such failure."""
        stuck = [answer["error"] for answer in failures if parse.error_name(answer) == LOCAL_TIMEOUT]
        if not stuck or self._client is None:
            return
        if said := "; ".join(filter(None, (self._client.last_error(), self._client.named_controller()))):
            for error in stuck:
                error["message"] += f" ({said})"
        self.close()

    def _delete_topic(self, name: str) -> None:
        """Delete a topic and wait until the cluster no longer lists it (deletion is asynchronous)."""
        self._all(
            f"deleting topic {name}",
            self._admin.delete_topics([name], operation_timeout=self.timeout, request_timeout=self.timeout),
        )
        waits.until(
            lambda: self.metadata().topic(name) is None or waits.NotYet(),
            DELETE_WAIT,
            fail=lambda why: BrokerError(f"topic {name} was still listed {DELETE_WAIT:.0f} s after deletion", hint="run again"),
            first=0.2,
            longest=1.0,
        )

    def ensure_led_by_every_broker(self, spec: TopicSpec) -> TopicResult:
        """Make a scratch topic (swarmkit's own) whose partitions have a leader on every broker.

        A topic made before a broker joined has no partition led there; since it holds only scratch
        traffic, it is deleted and made again rather than reassigned."""
        metadata = self.metadata()
        found = metadata.topic(spec.name)
        brokers = {b.node_id for b in metadata.brokers}
        if found is not None:
            leaders = {p.leader for p in found.partitions}
            if leaders >= brokers and found.replication_factor == spec.replicas:
                return TopicResult(self.bootstrap, spec.name, "exists", found.partition_count, found.replication_factor)
            self._delete_topic(spec.name)
        results: list[TopicResult] = []

        def created() -> bool | waits.NotYet:
            results[:] = self.ensure_topics([spec])
            return results[0].status == "created" or waits.NotYet()  # the deleted topic's name is not free yet

        waits.until(created, DELETE_WAIT)
        return results[0]

    # --- consumer groups --------------------------------------------------------------------------------

    def consumer_offsets(self) -> tuple[dict[str, dict[parse.Partition, int]], dict[parse.Partition, int]]:
        """(each consumer group's committed offsets, the log end of every partition a group committed on)."""
        listed = self._settle({"groups": self._admin.list_consumer_groups(request_timeout=self.timeout)}, answers.groups)
        committed = {group: self._committed(group) for group in parse.group_ids(self.bootstrap, listed["groups"])}
        return committed, self._log_ends({p for offsets in committed.values() for p in offsets})

    def _committed(self, group: str) -> dict[parse.Partition, int]:
        request = [ck.ConsumerGroupTopicPartitions(group)]  # one group per request, as librdkafka allows
        futures = self._admin.list_consumer_group_offsets(request, request_timeout=self.timeout)
        return parse.committed(self.bootstrap, self._settle(futures, answers.group_offsets)[group])

    def _log_ends(self, partitions: set[parse.Partition]) -> dict[parse.Partition, int]:
        if not partitions:
            return {}
        wanted = {ck.TopicPartition(topic, partition): ck_admin.OffsetSpec.latest() for topic, partition in sorted(partitions)}
        settled = self._settle(self._admin.list_offsets(wanted, request_timeout=self.timeout), answers.log_end)
        return parse.log_ends(self.bootstrap, {(tp.topic, tp.partition): answer for tp, answer in settled.items()})

    # --- users and their rights (sasl_ssl) --------------------------------------------------------------

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
        return list(self._one(f"listing {user}'s ACLs", future, list, SECURITY_HINT))

    def user_grants(self, user: str) -> tuple[Grant, ...]:
        return _grants(self._bindings(user))

    def set_grants(self, user: str, grants: Sequence[Grant]) -> tuple[Grant, ...]:
        """Make ``grants`` the user's whole set of ACLs: the missing ones created, any other one of the user's deleted.
        Returns the user's grants as a broker last answered them (the same set, read back)."""
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
        if stale or missing:
            self._until_read(f"{user}'s grants", lambda: set(self._bindings(user)) == wanted)
        return _grants(wanted)

    def _until_read(self, what: str, seen: Callable[[], bool]) -> None:
        """A change the controllers committed reaches each broker's metadata a moment later, and any broker may
        answer the next read: wait until a read shows it, so that the command's next step (a read-back) finds it."""
        waits.until(
            lambda: seen() or waits.NotYet(f"{what} not yet answered as changed"),
            self.timeout,
            fail=lambda why: BrokerError(f"{why} through {self.bootstrap} after {self.timeout:g}s", hint=parse.RETRY),
        )

    def authorized_topic_operations(self, topics: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """What this client's login may do on each topic (``read``, ``write``…), as the brokers' authorizer answers
        it; a topic it may not even describe maps to ``()``.  BrokerError when the login fails."""
        futures = self._admin.describe_topics(
            ck.TopicCollection(list(topics)), include_authorized_operations=True, request_timeout=self.timeout
        )
        return parse.authorized_operations(self.bootstrap, self._settle(futures, answers.topic_description))

    def set_scram_user(self, user: str, password: str) -> None:
        """Create or change a SCRAM-SHA-512 user (its salted credential goes into the cluster's metadata)."""
        mechanism = ck_admin.ScramCredentialInfo(ck_admin.ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS)
        change = ck_admin.UserScramCredentialUpsertion(user, mechanism, password.encode())
        self._all(
            f"setting user {user}",
            self._admin.alter_user_scram_credentials([change], request_timeout=self.timeout),
            SECURITY_HINT,
        )
        self._until_read(f"user {user}", lambda: user in self.scram_users())

    def remove_scram_user(self, user: str) -> None:
        change = ck_admin.UserScramCredentialDeletion(user, ck_admin.ScramMechanism.SCRAM_SHA_512)
        self._all(
            f"removing user {user}",
            self._admin.alter_user_scram_credentials([change], request_timeout=self.timeout),
            SECURITY_HINT,
        )
        self._until_read(f"user {user}'s removal", lambda: user not in self.scram_users())

    def scram_users(self) -> list[str]:
        """The users the cluster holds SCRAM credentials for."""
        future = self._admin.describe_user_scram_credentials(request_timeout=self.timeout)
        return parse.scram_users(self._one("listing users", future, answers.scram_users, SECURITY_HINT))


def _grants(bindings: Iterable[ck_admin.AclBinding]) -> tuple[Grant, ...]:
    """ACLs as grants: those swarmkit can write (allowed, any host, on a topic or a group)."""
    mine = [b for b in bindings if b.permission_type == ck_admin.AclPermissionType.ALLOW and b.host == "*"]
    return tuple(sorted(_as_grant(b) for b in mine if b.restype in (ck_admin.ResourceType.TOPIC, ck_admin.ResourceType.GROUP)))


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


def _lower(value: object) -> str:
    """An enum member's name as grants spell it (AclOperation.DESCRIBE_CONFIGS: describe-configs)."""
    return str(getattr(value, "name", value)).lower().replace("_", "-")


def _as_grant(binding: ck_admin.AclBinding) -> Grant:
    prefixed = binding.resource_pattern_type == ck_admin.ResourcePatternType.PREFIXED
    return Grant(_lower(binding.restype), binding.name, prefixed, _lower(binding.operation))


# --- one-request shorthands: a client for one call (a command making several holds one KafkaAdmin) -------


def broker_metadata(bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None) -> ClusterMetadata:
    """Ask one bootstrap address for cluster metadata; BrokerError if it does not answer in time."""
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


def partition_states(
    bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> tuple[tuple[int, ...], list[PartitionState]]:
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return kafka.partition_states()
