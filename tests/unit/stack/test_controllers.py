"""The controller set: what a new cluster gets, what the managers keep, and when a manager change is refused."""

from __future__ import annotations

import pytest

from swarmkit.errors import OperationError, SpecError
from swarmkit.stack.controllers import (
    STATIC_REFUSAL,
    Controller,
    ControllerSet,
    check_manager_set,
    directory_id,
    initial_controllers,
    majority,
)

CLUSTER_ID = "GWUac5XJSweTOgZI6YPd9g"
FIRST = ControllerSet.first(["m1", "m2", "m3"])


def test_a_new_cluster_gets_one_initial_controller_per_manager_in_inventory_order() -> None:
    assert FIRST.controllers == (Controller(9001, "m1"), Controller(9002, "m2"), Controller(9003, "m3"))
    assert FIRST.dynamic and FIRST.initial == (9001, 9002, 9003) and FIRST.next_id == 9004
    assert [c.service for c in FIRST.controllers] == ["controller-1", "controller-2", "controller-3"]


def test_the_kept_label_reads_back_the_same_set() -> None:
    replaced = FIRST.replaced("m2", "w4")
    assert replaced.label() == "initial=9001,9002,9003 next=9005 9001@m1 9003@m3 9004@w4"
    assert ControllerSet.parse(replaced.label()) == replaced
    static = ControllerSet.static(["m1", "m2", "m3"])
    assert static.label() == "static next=9004 9001@m1 9002@m2 9003@m3"
    assert ControllerSet.parse(static.label()) == static


def test_an_unreadable_label_is_an_error_naming_it() -> None:
    with pytest.raises(OperationError, match="cannot be read"):
        ControllerSet.parse("initial=9001 9001@m1")  # no next id


def test_ids_are_never_reused_even_when_the_highest_leaves() -> None:
    once = FIRST.replaced("m3", "w4")
    twice = once.replaced("w4", "w5")
    assert [c.node_id for c in twice.controllers] == [9001, 9002, 9005]
    assert twice.initial == (9001, 9002, 9003)  # what the cluster was formatted with stays


def test_initial_controllers_are_the_same_for_every_controller_and_derived_from_the_cluster_id() -> None:
    text = initial_controllers(FIRST, CLUSTER_ID, 9093)
    entries = text.split(",")
    assert [e.rsplit(":", 2)[0] for e in entries] == ["9001@controller-1", "9002@controller-2", "9003@controller-3"]
    ids = [e.rsplit(":", 1)[1] for e in entries]
    assert len(set(ids)) == 3 and all(len(i) == 22 for i in ids)
    assert ids[0] == directory_id(CLUSTER_ID, 9001) != directory_id("AAAAAAAAAAAAAAAAAAAAAw", 9001)
    assert initial_controllers(FIRST.replaced("m2", "w4"), CLUSTER_ID, 9093) == text  # a later controller is no initial one


@pytest.mark.parametrize("voters, needed", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3)])
def test_majority(voters: int, needed: int) -> None:
    assert majority(voters) == needed


def test_an_unchanged_manager_set_passes_in_any_order() -> None:
    check_manager_set(FIRST, ["m3", "m1", "m2"], "inv.yaml")


def test_a_swapped_manager_is_refused_with_the_command_to_run() -> None:
    with pytest.raises(SpecError) as refused:
        check_manager_set(FIRST, ["m1", "m3", "w4"], "inv.yaml")
    assert "m2 is no longer a manager, w4 is a new manager" in refused.value.message
    assert refused.value.hint == "a controller moves with: swarmkit replace-node m2 w4 -i inv.yaml"


def test_two_changes_at_once_are_refused_one_at_a_time() -> None:
    with pytest.raises(SpecError) as refused:
        check_manager_set(FIRST, ["m1", "w4", "w5"], "inv.yaml")
    assert "one manager at a time" in refused.value.hint


def test_a_static_quorum_refuses_any_manager_change() -> None:
    with pytest.raises(SpecError) as refused:
        check_manager_set(ControllerSet.static(["m1", "m2", "m3"]), ["m1", "m2", "m3", "w4"], "inv.yaml")
    assert STATIC_REFUSAL in refused.value.hint
