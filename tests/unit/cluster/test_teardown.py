"""Down (pure): purging needs a yes, and removes exactly the labels swarmkit keeps for a stack."""

from __future__ import annotations

import pytest

from swarmkit.cluster.teardown import check_purge, labels_to_purge
from swarmkit.errors import SpecError
from swarmkit.hosts.dockerapi import SwarmNode


def node(role: str, labels: dict[str, str]) -> SwarmNode:
    return SwarmNode("n", "k1", role, "ready", "active", "10.0.0.1", labels)


def test_purging_without_yes_is_refused_and_a_plain_down_needs_none() -> None:
    check_purge(False, False)
    check_purge(True, True)
    with pytest.raises(SpecError, match="deletes every broker's") as refused:
        check_purge(True, False)
    assert "--yes" in refused.value.hint


def test_purge_removes_the_broker_id_and_on_managers_the_mark_and_this_stacks_cluster_id() -> None:
    kept = {
        "swarmkit.broker-id": "1",
        "swarmkit.broker-id.next": "4",
        "swarmkit.cluster-id.kafka": "AAAAAAAAAAAAAAAAAAAAAA",
        "swarmkit.cluster-id.other": "BBBBBBBBBBBBBBBBBBBBBB",
        "swarmkit.host": "k1",
        "zone": "a",
    }
    assert labels_to_purge(node("manager", kept), "kafka") == [
        "swarmkit.broker-id",
        "swarmkit.broker-id.next",
        "swarmkit.cluster-id.kafka",
    ]
    assert labels_to_purge(node("worker", kept), "kafka") == ["swarmkit.broker-id"]
    assert labels_to_purge(node("manager", {"zone": "a"}), "kafka") == []
