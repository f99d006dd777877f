"""The pure parts of `swarmkit upgrade`: the order, the version checks, the feature levels."""

from __future__ import annotations

import pytest

from swarmkit.errors import OperationError, SpecError
from swarmkit.kafka import releases
from swarmkit.kafka.admin import PartitionState
from swarmkit.kafka.quorum import features_from
from swarmkit.ops import roll, upgrade
from swarmkit.ops.upgrade import ClusterVersions, NodeVersion

ON_431 = {"metadata.version": 30, "kraft.version": 1, "share.version": 1, "transaction.version": 2}
ON_440 = {**ON_431, "metadata.version": 33, "share.version": 2}


def cluster(controllers: str = "4.3.1", brokers: str = "4.3.1", finalized: dict | None = None, leader: int = 9002):
    nodes = [NodeVersion("controller", f"controller-{i}", 9000 + i, controllers) for i in (1, 2, 3)]
    nodes += [NodeVersion("broker", f"n{i}", i, brokers) for i in (3, 1, 2)]
    return ClusterVersions(tuple(nodes), dict(ON_431 if finalized is None else finalized), leader)


def test_controllers_first_followers_before_the_leader_then_brokers() -> None:
    names = [n.name for n in upgrade.order(cluster(), "4.4.0")]
    assert names == ["controller-1", "controller-3", "controller-2", "n1", "n2", "n3"]


def test_a_resumed_upgrade_leaves_out_the_nodes_on_the_target() -> None:
    assert [n.name for n in upgrade.order(cluster(controllers="4.4.0"), "4.4.0")] == ["n1", "n2", "n3"]
    assert upgrade.order(cluster("4.4.0", "4.4.0", ON_440), "4.4.0") == []


def test_a_downgrade_goes_the_other_way_round() -> None:
    names = [n.name for n in upgrade.order(cluster(controllers="4.4.0", brokers="4.4.0"), "4.3.1")]
    assert names == ["n1", "n2", "n3", "controller-1", "controller-3", "controller-2"]


def test_a_downgrade_before_the_finalize_is_allowed_after_it_refused_naming_the_level() -> None:
    upgrade.check_target(cluster(controllers="4.4.0"), "4.3.1")
    with pytest.raises(SpecError, match=r"metadata.version 4.4-IV2 \(33\)") as refused:
        upgrade.check_target(cluster("4.4.0", "4.4.0", ON_440), "4.3.1")
    assert refused.value.exit_code == 2 and "nothing was changed" in refused.value.message


@pytest.mark.parametrize("target", ["4.2.0", "5.0.0", "4.4"])
def test_a_release_swarmkit_does_not_know_is_refused(target: str) -> None:
    with pytest.raises(SpecError):
        upgrade.check_target(cluster(), target)


def test_a_jump_across_major_versions_is_refused() -> None:
    with pytest.raises(SpecError, match="across major versions"):
        releases.check_jump("3.9.1", "4.4.0")


def test_plan_lines_name_the_upgrade_and_the_finalize() -> None:
    assert upgrade.plan_lines(cluster(), "4.4.0", finalize=True) == [
        "upgrade 4.3.1 -> 4.4.0 (6 node(s), one at a time)",
        "then finalize metadata.version 4.3-IV0 (30) -> 4.4-IV2 (33)",
    ]
    assert upgrade.plan_lines(cluster("4.4.0", "4.4.0"), "4.4.0", finalize=True) == [
        "finalize metadata.version 4.3-IV0 (30) -> 4.4-IV2 (33)"
    ]
    assert upgrade.plan_lines(cluster("4.4.0", "4.4.0", ON_440), "4.4.0", finalize=True) == []


def test_finalize_raises_the_release_levels_never_lowers_and_leaves_kraft_version() -> None:
    assert releases.to_finalize("4.4.0", ON_431) == {"metadata.version": 33, "share.version": 2, "group.version": 1,
                                                       "eligible.leader.replicas.version": 1, "streams.version": 1}  # fmt: skip
    assert (
        releases.to_finalize("4.4.0", ON_440 | {"group.version": 1, "eligible.leader.replicas.version": 1, "streams.version": 1})
        == {}
    )
    assert "kraft.version" not in dict(releases.release("4.4.0").levels)


def test_finalize_waits_for_every_node_on_the_new_release() -> None:
    with pytest.raises(OperationError, match="n1 \\(4.3.1\\)"):
        upgrade.check_finalize(cluster(controllers="4.4.0"), "4.4.0")
    upgrade.check_finalize(cluster("4.4.0", "4.4.0"), "4.4.0")


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("apache/kafka:4.4.0", "4.4.0"),
        ("10.2.0.1:5000/swarmkit/kafka:4.3.1-0123456789ab", "4.3.1"),
        ("swarmkit/kafka:4.3.1", "4.3.1"),
        ("registry:5000/kafka", ""),
        ("kafka:latest", ""),
    ],
)
def test_the_version_an_image_names(image: str, version: str) -> None:
    assert releases.version_in(image) == version


def test_the_image_of_another_version_keeps_the_repository() -> None:
    assert upgrade.image_for("apache/kafka:4.3.1", "4.4.0") == "apache/kafka:4.4.0"
    assert upgrade.image_for("10.2.0.1:5000/swarmkit/kafka:4.3.1-0123456789ab", "4.4.0") == "10.2.0.1:5000/swarmkit/kafka:4.4.0"
    assert upgrade.image_for("registry:5000/kafka", "4.4.0") == "registry:5000/kafka:4.4.0"


def test_feature_levels_from_a_describe_features_answer() -> None:
    answer = {
        "metadata.version": {"supported": (7, 33), "finalized": (1, 30), "finalized_epoch": 12},
        "share.version": {"supported": (0, 2)},
    }
    features = features_from(answer)
    assert features.finalized == {"metadata.version": 30}
    assert features.supported["share.version"] == (0, 2) and features.metadata_level == 30


def partition(name: str, index: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...] | None = None):
    return PartitionState(name, index, leader, replicas, replicas if isr is None else isr, 2)


def test_leader_spread_and_the_partitions_to_hand_back() -> None:
    states = [partition("t", 0, 1, (1, 2, 3)), partition("t", 1, 1, (2, 3, 1)), partition("t", 2, 1, (3, 1, 2), (1, 2))]
    assert roll.leader_spread(states) == {1: 3, 2: 0, 3: 0}
    assert roll.not_preferred(states) == [("t", 1)]  # t-2's preferred replica is out of sync


def test_a_roll_refused_after_the_controllers_moved_says_they_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(session: object, options: roll.RollOptions) -> None:
        assert options.settle == 300 and options.resume  # given the upgrade's timeout to find the ISRs full
        raise OperationError("the cluster is not ready for a roll: 6 partition(s) not fully in sync; nothing was changed")

    monkeypatch.setattr(roll, "roll", refused)
    options = upgrade.UpgradeOptions(version="4.4.0", timeout=300)
    with pytest.raises(OperationError, match="controller-1, controller-2 moved to k:4.4.0, but the brokers' roll") as raised:
        upgrade._roll_brokers(None, options, "k:4.4.0", ["controller-1", "controller-2"])  # type: ignore[arg-type]
    assert raised.value.hint == upgrade.RESUME
    with pytest.raises(OperationError, match="^the cluster is not ready"):
        upgrade._roll_brokers(None, options, "k:4.4.0", [])  # type: ignore[arg-type]
