"""Faults named from readings: pure judging of reach views, data directory use and link times."""

from __future__ import annotations

import struct

from swarmkit.checks import symptoms
from swarmkit.checks.symptoms import FaultSign, HostView

ADDRESSES = {"n1": "10.0.0.11", "n2": "10.0.0.12", "n3": "10.0.0.13"}


def view(reaches: dict[str, bool], percent: int = 10) -> HostView:
    return HostView(reaches, percent, 256)


def test_the_script_output_is_read() -> None:
    output = "reach 10.0.0.12 124\nreach 10.0.0.13 1\nreach 10.0.0.14 0\ndisk tmpfs 262144 262144 0 100% /var/lib/kafka/data"
    assert symptoms.parse_view(output) == HostView({"10.0.0.12": True, "10.0.0.13": False, "10.0.0.14": True}, 100, 256)
    assert symptoms.parse_view("") == HostView({}, -1, 0)


def test_a_host_cut_off_from_everyone_is_the_one_named() -> None:
    views = {
        "n1": view({"10.0.0.12": True, "10.0.0.13": False}),
        "n2": view({"10.0.0.11": True, "10.0.0.13": False}),
        "n3": view({"10.0.0.11": False, "10.0.0.12": False}),
    }
    (sign,) = symptoms.partitions(views, ADDRESSES, ["n3"], ["n3"])
    assert (sign.node, sign.kind) == ("n3", "partition")
    assert "cut off from n1, n2" in sign.detail and "not reachable from here" in sign.detail and "fenced" in sign.detail


def test_a_host_whose_container_does_not_answer_is_still_named_from_its_peers() -> None:
    views = {"n1": view({"10.0.0.12": True, "10.0.0.13": False}), "n2": view({"10.0.0.11": True, "10.0.0.13": False})}
    assert [s.node for s in symptoms.partitions(views, ADDRESSES, None, [])] == ["n3"]


def test_a_healthy_swarm_names_nothing() -> None:
    views = {name: view({a: True for n, a in ADDRESSES.items() if n != name}) for name in ADDRESSES}
    assert symptoms.signs_of(views, {"n1": 0.002, "n2": 0.003, "n3": 0.002}, ADDRESSES, [], []) == ()


def test_a_full_data_directory_is_named() -> None:
    signs = symptoms.full_disks({"n1": view({}, 100), "n2": view({}, 40), "n3": view({}, -1)})
    assert [(s.node, s.kind) for s in signs] == [("n1", "disk-full")]


def test_only_a_markedly_slower_link_is_named() -> None:
    assert symptoms.slow_links({"n1": 0.002, "n2": 0.003, "n3": 0.140}) == [
        FaultSign("n3", "slow-link", symptoms.slow_links({"n1": 0.002, "n2": 0.003, "n3": 0.140})[0].detail)
    ]
    assert symptoms.slow_links({"n1": 0.020, "n2": 0.030, "n3": 0.045}) == []  # a busy machine: slower, not markedly
    assert symptoms.slow_links({"n1": 0.002, "n3": 0.140}) == []  # no peers' median to compare with


def test_the_timed_request_is_a_whole_metadata_request() -> None:
    request = symptoms._metadata_request()
    size, api_key, version = struct.unpack(">ihh", request[:8])
    assert (size, api_key, version) == (len(request) - 4, 3, 1)
    assert len(request) > symptoms.REQUEST_PADDING and request.endswith(struct.pack(">i", -1))


def test_the_fuller_reading_of_a_data_disk_is_the_one_judged() -> None:
    cut_short = HostView({"10.0.0.12": True}, -1, 0)  # the broker stopped while its view was read
    beside = HostView({}, 100, 256)  # the volume read from beside the broker
    assert symptoms.with_disk(cut_short, beside) == HostView({"10.0.0.12": True}, 100, 256)
    assert symptoms.with_disk(view({}, 100), HostView({}, 40, 256)) == view({}, 100)
    assert symptoms.with_disk(cut_short, None) == cut_short


def test_a_hosts_own_view_and_its_volume_read_beside_the_broker_make_one_view() -> None:
    reach = HostView({"10.0.0.12": True}, -1, 0)
    full = HostView({}, 100, 256)
    views = symptoms.views_of(["n1", "n2", "n3"], [reach, TimeoutError(), None], [full, full, OSError()])
    assert views == {"n1": HostView({"10.0.0.12": True}, 100, 256), "n2": HostView({}, 100, 256)}
