"""replace-node's pure parts: which voter leaves and which joins, the majority check, the catch-up test."""

from __future__ import annotations

import pytest

from swarmkit.errors import OperationError, SpecError
from swarmkit.kafka.quorum import QuorumState, Replica
from swarmkit.ops.replace import (
    add_controller_script,
    caught_up,
    check_majority,
    plan_replacement,
    remove_controller_script,
)
from swarmkit.stack.controllers import STATIC_REFUSAL, Controller, ControllerSet
from swarmkit.stack.listeners import ListenerPlan

FIRST = ControllerSet.first(["m1", "m2", "m3"])
NOW = 1_000_000


def state(*voters: tuple[int, int], leader: int = 9001, observers: tuple[tuple[int, int], ...] = ()) -> QuorumState:
    """(node id, ms since it last caught up; -1: never) per voter."""

    def replica(node_id: int, ago: int) -> Replica:
        return Replica(node_id, 100, -1 if ago < 0 else NOW - ago, f"dir-{node_id}")

    return QuorumState(leader, 100, tuple(replica(*v) for v in voters), tuple(replica(*o) for o in observers))


def test_the_dead_managers_controller_leaves_and_a_new_id_joins_on_the_new_manager() -> None:
    planned = plan_replacement(FIRST, "m2", "w4", ["m1", "m3", "w4"])
    assert planned.dead == Controller(9002, "m2")
    assert planned.new == Controller(9004, "w4")
    assert planned.after.hosts == ("m1", "m3", "w4") and planned.after.next_id == 9005


@pytest.mark.parametrize(
    "kept, dead, new, managers, refusal",
    [
        (None, "m2", "w4", ["m1", "m3", "w4"], STATIC_REFUSAL),
        (ControllerSet.static(["m1", "m2", "m3"]), "m2", "w4", ["m1", "m3", "w4"], STATIC_REFUSAL),
        (FIRST, "m2", "w4", ["m1", "m2", "m3"], "w4 is not a manager in the inventory"),
        (FIRST, "m2", "w4", ["m1", "m2", "m3", "w4"], "m2 is still a manager in the inventory"),
        (FIRST, "w9", "w4", ["m1", "m2", "m3", "w4"], "w9 runs no controller"),
        (FIRST, "m2", "m3", ["m1", "m3"], "m3 runs a controller already"),
    ],
)
def test_what_cannot_be_replaced_is_refused(kept, dead, new, managers, refusal) -> None:
    with pytest.raises(SpecError, match=refusal):
        plan_replacement(kept, dead, new, managers)


def test_two_following_voters_besides_the_dead_one_are_enough() -> None:
    check_majority(state((9001, 0), (9002, -1), (9003, 200)), 9002)


def test_a_lagging_second_voter_refuses_the_removal() -> None:
    with pytest.raises(OperationError, match="only 1 of the 2 other voters follow the leader"):
        check_majority(state((9001, 0), (9002, -1), (9003, 60_000)), 9002)


def test_no_leader_refuses_the_removal() -> None:
    with pytest.raises(OperationError, match="no leader"):
        check_majority(state((9001, -1), (9002, -1), (9003, -1), leader=-1), 9002)


def test_five_voters_survive_one_lagging_besides_the_dead_one() -> None:
    check_majority(state((9001, 0), (9002, -1), (9003, 100), (9004, 100), (9005, 90_000)), 9002)


def test_ages_are_measured_on_the_leaders_clock_not_this_machines() -> None:
    skewed = QuorumState(9001, 100, (Replica(9001, 100, NOW + 3_600_000, "a"),), (Replica(9004, 100, NOW + 3_599_000, "b"),))
    assert caught_up(skewed, 9004)


def test_an_observer_has_caught_up_once_it_fetched_the_leaders_end_recently() -> None:
    assert caught_up(state((9001, 0), observers=((9004, 1000),)), 9004)
    assert not caught_up(state((9001, 0), observers=((9004, 60_000),)), 9004)
    assert not caught_up(state((9001, 0), observers=((9004, -1),)), 9004)
    assert not caught_up(state((9001, 0)), 9004)


def test_the_add_controller_script_names_the_new_controllers_id_and_endpoint() -> None:
    script = add_controller_script(Controller(9004, "w4"), ListenerPlan(), None)
    assert "node.id=9004" in script and "listeners=CONTROLLER://controller-4:9093" in script
    assert "--bootstrap-controller localhost:9093 add-controller" in script
    secure = add_controller_script(Controller(9004, "w4"), ListenerPlan().with_security("ssl"), "/x/internal.properties")
    assert "cat /x/internal.properties" in secure


def test_the_remove_controller_script_names_the_voters_id_and_directory_id() -> None:
    script = remove_controller_script(Replica(9002, 7, 1, "RYHFYrYrVCm_YI26adCFBQ"), ListenerPlan(), None)
    assert script.endswith("remove-controller --controller-id 9002 --controller-directory-id RYHFYrYrVCm_YI26adCFBQ")
    assert script.startswith("timeout -s KILL ")  # a stuck JVM is killed
