"""Pure parts of verify: what changed since the last pass, what a node's broker tasks say, and that every step keeps
to verify's deadline (with reads that stand in for engines and brokers that do not answer)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from swarmkit import waits
from swarmkit.checks import symptoms, verify
from swarmkit.checks.diagnose import Probe
from swarmkit.checks.disk import BrokerDisk
from swarmkit.checks.health import Quorum
from swarmkit.checks.symptoms import HostView
from swarmkit.checks.verify import BrokerVerdict, TopicVerdict, VerifyReport, _task_summary, compare
from swarmkit.errors import BrokerError, EngineError, VerifyError
from swarmkit.hosts.dockerapi import DockerHosts, EngineInfo, ServiceState, TaskState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.stack.deployed import DeployedStack
from swarmkit.swarm import view


def verdict(node: str, advertised: str, ok: bool = True) -> BrokerVerdict:
    detail, fix = ("ok", "") if ok else ("refused", "fix")
    return BrokerVerdict(1, advertised, ok, ok, ok, detail, fix=fix, node=node, expected=advertised, task="running")


def task(state: str, desired: str, created: str, error: str = "") -> TaskState:
    return TaskState(f"t{created}", "kafka_broker.x", "n1", desired, state, state, error, "", created, True)


def test_first_run_says_there_is_nothing_to_compare() -> None:
    assert compare(None, [verdict("n1", "n1:9094")]) == ["first verification: no earlier state to compare with"]


def test_added_lost_and_moved_brokers_are_named() -> None:
    previous = {"n1": "n1:9094", "n2": "n2:9094", "n3": "n3:9094"}
    current = [
        verdict("n1", "10.0.0.1:9094"),
        verdict("n2", "n2:9094", ok=False),
        verdict("n4", "n4:9094"),
    ]
    assert compare(previous, current) == [
        "node added: n4 (broker ok)",
        "broker moved: n1 advertised n1:9094, now 10.0.0.1:9094",
        "node lost: n2's broker (n2:9094) no longer passes: refused",
        "node lost: n3 is no longer in the inventory (was n3:9094)",
    ]


def test_an_unchanged_cluster_has_no_changes() -> None:
    assert compare({"n1": "n1:9094"}, [verdict("n1", "n1:9094")]) == []


def test_a_crash_loop_is_described_between_attempts() -> None:
    tasks = [
        task("failed", "shutdown", "1", "task: non-zero exit (64)"),
        task("failed", "shutdown", "2", "task: non-zero exit (64)"),
        task("ready", "ready", "3"),
    ]
    state, problem = _task_summary(tasks)
    assert state == "ready"
    assert problem == "broker task is ready after 2 failed attempts: task: non-zero exit (64)"


def test_a_healthy_task_has_no_problem_and_no_task_is_named() -> None:
    assert _task_summary([task("running", "running", "1")]) == ("running", "")
    assert _task_summary([]) == ("none", "no broker task is scheduled on this node")


def test_a_report_lists_every_failed_check_and_none_when_ok() -> None:
    failed = VerifyReport(
        (verdict("k1", "k1:9094"), verdict("k2", "k2:9094", ok=False)),
        (TopicVerdict("k1:9094", "orders", False, "missing"),),
        (),
        cluster_error="no broker passed its checks",
    )
    assert not failed.ok
    assert [line.split(":")[0] for line in failed.problems] == ["k2", "topic orders on k1", "no broker passed its checks"]
    assert VerifyReport((verdict("k1", "k1:9094"),), (), ()).problems == []


# --- every step within verify's deadline (the reads stand in for engines and brokers that do not answer) ---------


HOSTS = Inventory(hosts=tuple(Host(f"m{i}", f"unix:///run/m{i}.sock", f"10.9.0.{10 + i}", "manager") for i in (1, 2, 3)))
STACK = DeployedStack("kafka", ServiceState("kafka_broker", "", "", {}, ()))


def swarm() -> verify._Swarm:
    return verify._Swarm({}, [], STACK, HOSTS.hosts[1], None)


def test_reads_that_do_not_answer_by_the_deadline_are_named_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    release, asked = threading.Event(), []
    monkeypatch.setattr(verify, "_check_topics", lambda *args: release.wait(5) and [])
    monkeypatch.setattr(verify, "_lag", lambda *args: ((), ""))
    monkeypatch.setattr(verify.disk, "broker_disks", lambda *args: ())
    monkeypatch.setattr(verify, "_releases", lambda manager, *args: asked.append(manager) or release.wait(5))
    monkeypatch.setattr(verify, "_cluster", lambda *args: release.wait(5))
    brokers = [verdict("m1", "m1:9094", ok=False), verdict("m2", "m2:9094")]
    quorum = Quorum(-1, error="the quorum read did not answer within 20s")
    session = Session(HOSTS, DockerHosts.from_inventory(HOSTS))
    started = time.monotonic()
    reads = verify._cluster_reads(session, swarm(), brokers, quorum, verify.VerifyOptions(), started + 0.3)
    release.set()
    assert time.monotonic() - started < 2
    assert reads.topics == [TopicVerdict("m2:9094", "*", False, f"the topics were not read: {verify.LATE}")]
    assert reads.lag == ((), "") and reads.disks == () and reads.kafka is None
    assert reads.cluster[0] is None and reads.cluster[1].startswith(
        f"the cluster's state was not read from m2:9094: {verify.LATE}"
    )
    assert "the quorum read did not answer within 20s" in reads.cluster[1]
    assert asked == [session.docker[HOSTS.hosts[1]]]  # the manager whose view was read, not the first one


def test_a_read_that_fails_is_raised_and_one_late_gives_its_stand_in() -> None:
    assert verify._or_late(TimeoutError("late"), "stand-in") == "stand-in"
    assert verify._or_late(("answer",), ()) == ("answer",)
    with pytest.raises(ZeroDivisionError):
        verify._or_late(ZeroDivisionError(), None)


def test_the_reads_end_before_the_budget_so_the_links_are_still_timed() -> None:
    budget = waits.Budget(10)
    assert budget.deadline - verify._reads_deadline(budget) == pytest.approx(verify.LINKS_SHARE, abs=0.1)
    ample = waits.Budget(60)
    assert verify._reads_deadline(ample) == pytest.approx(time.monotonic() + verify.READS_BOUND, abs=0.1)
    spent = waits.Budget(1)
    assert verify._reads_deadline(spent) == pytest.approx(time.monotonic(), abs=0.1)  # nothing left: read nothing


def test_managers_electing_a_leader_are_asked_again_until_the_swarm_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def view(host: Host, *args: object) -> tuple[list, DeployedStack]:
        asked.append(host.name)
        if host.name == "m2" and asked.count("m2") < 2:
            raise VerifyError("rpc error: The swarm does not have a leader. It's possible that too few managers are online.")
        if host.name == "m3":
            raise VerifyError("reading the swarm: the manager m3 did not answer in time")
        return [], STACK

    monkeypatch.setattr(verify, "_swarm_view", view)
    monkeypatch.setattr(verify.waits.Pause, "sleep", lambda self: None)
    engines = {h.name: EngineInfo(h.endpoint, "27.0", h.name, "active", "", "", 0) for h in HOSTS.hosts[1:]}
    engines |= {"m1": EngineError("the Docker engine of m1 did not answer in time")}
    early: Future = Future()
    early.set_result(None)
    nodes, stack, manager = verify._answering_view(HOSTS, engines, {}, verify.VerifyOptions(), waits.Budget(30), early)
    assert (stack, manager.name) == (STACK, "m2") and asked == ["m2", "m3", "m2"]  # m3 is not asked again


def test_a_manager_that_hangs_does_not_keep_the_next_from_showing_the_swarm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A manager cut off from the others may not answer at all (drill run Y): the next one is asked after the hedge."""
    release = threading.Event()

    def view(host: Host, *args: object) -> tuple[list, DeployedStack]:
        if host.name == "m2":
            release.wait(5)
            raise VerifyError("reading the swarm: the manager m2 did not answer in time")
        return [], STACK

    monkeypatch.setattr(verify, "_swarm_view", view)
    monkeypatch.setattr(verify, "MANAGER_HEDGE", 0.2)
    engines = {h.name: EngineInfo(h.endpoint, "27.0", h.name, "active", "", "", 0) for h in HOSTS.hosts[1:]}
    engines |= {"m1": EngineError("the Docker engine of m1 did not answer in time")}
    early: Future = Future()
    early.set_result(None)
    began = time.monotonic()
    _, _, manager = verify._answering_view(HOSTS, engines, {}, verify.VerifyOptions(), waits.Budget(30), early)
    release.set()
    assert manager.name == "m3" and time.monotonic() - began < 2


def test_a_full_log_directory_read_after_the_brokers_is_named_when_the_hosts_own_view_came_late() -> None:
    mib = 2**20
    disks = (BrokerDisk("m1", 0, 256 * mib, 0), BrokerDisk("m2", 0, 256 * mib, 200 * mib), BrokerDisk("m3", error="late"))
    views = verify._disk_views(disks)
    assert set(views) == {"m1", "m2"} and views["m1"].reaches == {}
    assert [(s.node, s.kind) for s in symptoms.full_disks(views)] == [("m1", "disk-full")]


def test_a_full_disk_is_named_when_the_hosts_own_view_was_cut_short_by_its_broker_stopping() -> None:
    mib = 2**20
    cut_short = {"m1": HostView({"10.9.0.12": True}, -1, 0)}  # the exec ended with the container: no df line
    disks = verify._disk_views((BrokerDisk("m1", 0, 256 * mib, 0),))
    views = disks | {node: symptoms.with_disk(view, disks.get(node)) for node, view in cut_short.items()}
    assert views["m1"] == HostView({"10.9.0.12": True}, 100, 256)
    assert [(s.node, s.kind) for s in symptoms.full_disks(views)] == [("m1", "disk-full")]


# --- a swarm without a leader: verify goes on from the client's side --------------------------------------------


NO_LEADER = EngineError("rpc error: The swarm does not have a leader. It's possible that too few managers are online.")


def test_without_the_swarms_view_each_broker_is_judged_as_asked_from_here() -> None:
    options, host = verify.VerifyOptions(), HOSTS.hosts[0]
    answered = Probe("10.9.0.11", 9094, connect="ok", answered=True, answered_brokers=((1, "m1:9094"),), metadata_ms=3.0)
    seen = verify._asked_from_here(host, answered, options, verify.LEADERLESS)
    assert seen.ok and seen.reachable and seen.node == "m1" and "the swarm has no leader" in seen.detail
    assert seen.task == verify.NOT_READ
    dropped = verify._asked_from_here(host, Probe("10.9.0.11", 9094, connect="timeout"), options, verify.LEADERLESS)
    assert not dropped.ok and not dropped.reachable and "does not answer" in dropped.detail
    late = verify._asked_from_here(host, TimeoutError(), options, verify.LEADERLESS)
    assert not late.ok and not late.reachable and "no answer within 5s" in late.detail


def test_a_quorum_the_brokers_did_not_describe_says_why() -> None:
    assert verify._quorum_answer(Quorum(9002), 5.0) == Quorum(9002)
    assert "no broker described it within 5s" in verify._quorum_answer(TimeoutError(), 5.0).error
    assert verify._quorum_answer(BrokerError("refused"), 5.0).error == "not read from the brokers: refused"


def test_a_leaderless_swarm_does_not_stop_verify_from_naming_the_partitioned_host(monkeypatch: pytest.MonkeyPatch) -> None:
    def leaderless(*args: object) -> None:
        raise NO_LEADER

    def probe(address: str, port: int, *args: object) -> Probe:
        if address == "10.9.0.13":
            return Probe(address, port, connect="timeout")
        return Probe(address, port, connect="ok", answered=True, answered_brokers=((1, "m1:9094"),))

    cut = {
        "m1": HostView({"10.9.0.12": True, "10.9.0.13": False}, 10, 256),
        "m2": HostView({"10.9.0.11": True, "10.9.0.13": False}, 10, 256),
        "m3": HostView({"10.9.0.11": False, "10.9.0.12": False}, 10, 256),
    }
    monkeypatch.setattr(verify, "_checked", leaderless)
    monkeypatch.setattr(verify.diagnose, "probe_address", probe)
    monkeypatch.setattr(verify.health, "quorum_from_brokers", lambda *args: Quorum(9002))
    monkeypatch.setattr(verify.symptoms, "read_views", lambda *args: cut)
    monkeypatch.setattr(verify.symptoms, "read_links", lambda *args: {})
    report = verify.verify(Session(HOSTS, DockerHosts.from_inventory(HOSTS)), verify.VerifyOptions(budget=30))
    assert not report.ok and report.cluster_error.startswith("the swarm's view is missing (rpc error: The swarm does not")
    assert [(f.node, f.kind) for f in report.faults] == [("m3", "partition")]
    assert "not reachable from here" in report.faults[0].detail
    assert [b.reachable for b in report.brokers] == [True, True, False]


def test_a_swarm_that_fails_otherwise_still_stops_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*args: object) -> None:
        raise VerifyError("stack 'kafka' is not deployed (no service kafka_broker)")

    monkeypatch.setattr(verify, "_checked", missing)
    monkeypatch.setattr(verify.symptoms, "read_views", lambda *args: {})
    with pytest.raises(VerifyError, match="not deployed"):
        verify.verify(Session(HOSTS, DockerHosts.from_inventory(HOSTS)), verify.VerifyOptions(budget=30))


# --- a manager's engine busy while the swarm elects a leader: its broker is asked from here ---------------------------


def answering(address: str, port: int, *args: object) -> Probe:
    return Probe(address, port, connect="ok", answered=True, answered_brokers=((2, "m2:9094"),), metadata_ms=2.0)


def test_an_engine_late_past_its_bound_is_busy_not_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The words engine_states gives an engine silent past its bound are the ones verify takes for a busy engine."""
    monkeypatch.setattr(view, "settle_by", lambda calls, deadline: [TimeoutError()] * len(calls))
    engines = view.engine_states(HOSTS, DockerHosts.from_inventory(HOSTS))
    assert all(verify._late(engine) for engine in engines.values())
    refused = EngineError("the Docker engine at unix:///run/m2.sock does not answer: connection refused", hint="start dockerd")
    assert not verify._late(refused) and not verify._late(EngineInfo("e", "27.0", "m2", "active", "", "", 0))
    assert verify.late_engines({"m1": refused} | {k: v for k, v in engines.items() if k != "m1"}) == (
        "the Docker engines of m2, m3 did not answer in time: their brokers were asked from here only"
    )
    assert verify.late_engines({"m1": refused}) == ""


def test_a_late_engines_broker_is_asked_from_here_and_dockerd_is_not_blamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify.diagnose, "probe_address", answering)
    host, options = HOSTS.hosts[1], verify.VerifyOptions()
    late = EngineError("the Docker engine of m2 did not answer in time (unix:///run/m2.sock)")
    seen = verify._judge_node(host, late, None, [], "hostname", options)
    assert seen.ok and seen.advertised == "10.9.0.12:9094" and seen.task == verify.NOT_READ
    assert verify.ENGINE_BUSY in seen.detail and "dockerd" not in seen.detail + seen.fix
    stopped = EngineError("the Docker engine at unix:///run/m2.sock does not answer: connection refused")
    refused = verify._judge_node(host, stopped, None, [], "hostname", options)
    assert not refused.ok and refused.fix == "start dockerd on m2"  # a refusal: dockerd does not run there


def test_the_cluster_is_read_through_a_broker_asked_from_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the managers' engines busy, the brokers they run still answer: the cluster's state (who is fenced) is
    read through them, and what they advertise is not counted as a move."""
    asked: list[str] = []
    monkeypatch.setattr(verify.health, "cluster_health_from", lambda quorum, bootstrap, *args: asked.append(bootstrap))
    options = verify.VerifyOptions()
    cut = verify._asked_from_here(HOSTS.hosts[0], Probe("10.9.0.11", 9094, connect="timeout"), options, verify.ENGINE_BUSY)
    busy = verify._asked_from_here(HOSTS.hosts[1], answering("10.9.0.12", 9094), options, verify.ENGINE_BUSY)
    assert verify._cluster(HOSTS, [], [cut, busy], Quorum(9002), options) == (None, "")
    assert asked == ["10.9.0.12:9094"]
    assert compare({"m2": "m2:9094"}, [busy]) == []
