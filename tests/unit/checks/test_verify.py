"""Pure parts of verify: what changed since the last pass, what a node's broker tasks say, and that every step keeps
to verify's deadline (with reads that stand in for engines and brokers that do not answer)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from swarmkit import waits
from swarmkit.checks import symptoms, verify
from swarmkit.checks.disk import BrokerDisk
from swarmkit.checks.health import Quorum
from swarmkit.checks.verify import BrokerVerdict, TopicVerdict, VerifyReport, _task_summary, compare
from swarmkit.errors import EngineError, VerifyError
from swarmkit.hosts.dockerapi import DockerHosts, EngineInfo, ServiceState, TaskState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.stack.deployed import DeployedStack


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


def test_a_full_log_directory_read_after_the_brokers_is_named_when_the_hosts_own_view_came_late() -> None:
    mib = 2**20
    disks = (BrokerDisk("m1", 0, 256 * mib, 0), BrokerDisk("m2", 0, 256 * mib, 200 * mib), BrokerDisk("m3", error="late"))
    views = verify._disk_views(disks)
    assert set(views) == {"m1", "m2"} and views["m1"].reaches == {}
    assert [(s.node, s.kind) for s in symptoms.full_disks(views)] == [("m1", "disk-full")]
