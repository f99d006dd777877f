"""Fault drills beyond a stopped engine, on one replicated Apache Kafka cluster (3 hosts, three managers, RF 3,
min ISR 2, each host's broker data disk 256 MB), each under an idempotent acks=all producer
(tests/integration/fault_drills.py): one host's link limited to 1 mbit/s, a full data disk on one broker, a
broker host partitioned from everything for 60 s, the quorum leader's host partitioned.  Every drill: nothing
acknowledged lost or duplicated; `verify --timeout 30 --json` returns within 40 s with exit 1 naming the node
and the fault; after heal every partition is back at full ISR within 60 s.  No task is restarted, except the
full disk's broker: Kafka stops a broker whose only log directory fails, and the swarm starts it again (it
comes back once heal has freed the disk).  The faults are held no longer than the acceptance asks.
"""

from __future__ import annotations

import pytest

from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import faults
from swarmkit.sandbox.state import Sandbox
from tests.integration.fault_drills import CLIENT, DrillResult, drill, quorum_leader_host
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "dr"
dr = module_sandbox(NAME, 3, "10.213.0.0/24", engine="apache", managers=3, data_limit="256m")
VERIFY_WITHIN = 40.0
IN_SYNC_WITHIN = 60.0


@pytest.fixture(scope="module")
def cluster(dr: Sandbox) -> Inventory:
    inventory = load_inventory(dr.inventory_path)
    assert up(plan(inventory, DeployOptions(topics="orders:6:3")), Session.of(inventory)).ok
    return inventory


def assert_drill(result: DrillResult, restarted: set[str]) -> None:
    """``restarted``: the services allowed to have a task replaced."""
    assert (result.lost, result.duplicated) == (0, 0), result
    assert result.acknowledged >= 1600, result
    assert result.verify_exit == 1 and result.verify_s < VERIFY_WITHIN, result
    assert result.named, f"verify did not name {result.fault} on {result.node}: {result.faults_seen}"
    assert 0 <= result.in_sync_s < IN_SYNC_WITHIN, result
    assert 0 <= result.quorum_s < IN_SYNC_WITHIN, f"a controller did not follow the quorum's leader again: {result}"
    assert set(result.restarted) <= restarted, result
    assert result.settled_s >= 0, f"the swarm still had tasks to start or stop 180 s after heal: {result}"
    assert faults.active(NAME) == ()


def test_a_slow_link_is_named_and_loses_nothing(cluster: Inventory) -> None:
    assert_drill(drill(cluster, NAME, "slow", "dr1", 0, "slow", CLIENT), set())


def test_a_full_data_disk_is_named_and_loses_nothing(cluster: Inventory) -> None:
    assert_drill(drill(cluster, NAME, "disk-full", "dr2", 0, "disk", CLIENT), {"kafka_broker"})


def test_a_partitioned_broker_host_for_60_s_loses_nothing(cluster: Inventory) -> None:
    node = next(h.name for h in cluster.hosts if h.name != quorum_leader_host(cluster))
    assert_drill(drill(cluster, NAME, "partition", node, 60, "cut", CLIENT), set())


def test_the_quorum_leaders_host_partitioned_loses_nothing(cluster: Inventory) -> None:
    assert_drill(drill(cluster, NAME, "partition", quorum_leader_host(cluster), 0, "leader", CLIENT), set())
