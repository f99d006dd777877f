"""Pure parts of verify: what changed since the last pass, and what a node's broker tasks say."""

from __future__ import annotations

from swarmkit.checks.verify import BrokerVerdict, TopicVerdict, VerifyReport, _task_summary, compare
from swarmkit.hosts.dockerapi import TaskState


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
