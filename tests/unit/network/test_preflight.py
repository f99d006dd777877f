"""Preflight's pure parts: which pairs and ports get probed, the probe scripts' protocol, verdicts and fixes."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from swarmkit.cli.tables import print_preflight
from swarmkit.errors import PreflightError, SpecError
from swarmkit.hosts.inventory import Host
from swarmkit.network.preflight import (
    CLIENT,
    GIB,
    NO_ECHO,
    Check,
    EngineStatus,
    Probe,
    _reach_detail,
    build_report,
    cluster_ports,
    echo_token,
    engine_checks,
    listener_script,
    parse_listener,
    parse_prober,
    plan_probes,
    ports_on,
    prober_script,
    socat_address,
)

HOSTS = (
    Host("node1", "unix:///n1.sock", "10.0.0.11", "manager"),
    Host("node2", "unix:///n2.sock", "10.0.0.12", "worker"),
    Host("node3", "unix:///n3.sock", "10.0.0.13", "worker"),
)
PORTS = cluster_ports()


def engine(name: str, **changes) -> EngineStatus:
    values = dict(
        host=name,
        endpoint=f"unix:///{name}.sock",
        answered=True,
        version="20.10.24",
        hostname=name,
        swarm_state="inactive",
        memory_bytes=8 * GIB,
    )
    values.update(changes)
    return EngineStatus(**values)


def reach(source: str, target: str, port: int, protocol: str, ok: bool = True) -> Check:
    return Check("reachable", "ok" if ok else "failed", target, source, port, protocol, "" if ok else "10.0.0.13: timed out")


def test_cluster_ports_are_the_issue_list():
    assert [p.key for p in PORTS] == ["2377/tcp", "7946/tcp", "7946/udp", "4789/udp", "9092/tcp", "9094/tcp"]
    assert [p.key for p in PORTS if p.from_client] == ["9094/tcp"]
    assert [p.key for p in cluster_ports(client_port=19094) if p.from_client] == ["19094/tcp"]


@pytest.mark.parametrize("client_port, internal_port", [(9092, 9092), (2377, 9092), (9094, 7946)])
def test_cluster_ports_must_not_collide(client_port, internal_port):
    with pytest.raises(SpecError) as refused:
        cluster_ports(client_port, internal_port)
    assert refused.value.exit_code == 2 and "--external-port" in refused.value.hint and "--internal-port" in refused.value.hint


def test_management_port_only_on_managers():
    assert "2377/tcp" in [p.key for p in ports_on(HOSTS[0], PORTS)]
    assert "2377/tcp" not in [p.key for p in ports_on(HOSTS[1], PORTS)]


def test_plan_covers_every_ordered_pair_and_the_client():
    probes = plan_probes(HOSTS, PORTS)
    pairs = {(p.source, p.target) for p in probes if p.source != CLIENT}
    assert pairs == {(a.name, b.name) for a in HOSTS for b in HOSTS if a != b}
    # 6 ordered pairs x 5 common ports, 2377 to the one manager from 2 hosts, 9094 from here to 3 hosts
    assert len(probes) == 6 * 5 + 2 + 3
    assert {p.target for p in probes if p.port.port == 2377} == {"node1"}
    assert {(p.target, p.port.key) for p in probes if p.source == CLIENT} == {(h.name, "9094/tcp") for h in HOSTS}
    assert all(p.address == next(h.address for h in HOSTS if h.name == p.target) for p in probes)


def test_plan_grows_with_pairs():
    six = tuple(Host(f"n{i}", f"unix:///n{i}.sock", f"10.0.0.{i}", "manager" if i == 1 else "worker") for i in range(1, 7))
    assert len(plan_probes(six, PORTS)) == 30 * 5 + 5 + 6


def test_listener_script_listens_on_each_port_and_ends_by_itself():
    script = listener_script(ports_on(HOSTS[1], PORTS), lifetime=42)
    assert "TCP-LISTEN:7946,fork,reuseaddr" in script
    assert "UDP-RECVFROM:4789,fork PIPE" in script
    assert "2377" not in script
    assert script.endswith("sleep 42")


def test_parse_listener_first_report_per_port_counts():
    output = "\n".join(
        [
            "BOUND 7946/tcp",
            "BUSY 9092/tcp Address already in use",
            "BUSY 7946/tcp Connection reset by peer",  # a later error of a child process
            "BOUND 4789/udp",
        ]
    )
    assert parse_listener(output) == {"7946/tcp": "", "9092/tcp": "Address already in use", "4789/udp": ""}


def test_prober_script_and_its_output():
    probes = [
        Probe("node1", "node2", "10.0.0.12", PORTS[1]),
        Probe("node1", "node2", "10.0.0.12", PORTS[3]),
    ]
    script = prober_script(probes)
    assert "tcp 0 TCP:10.0.0.12:7946 &" in script
    token = echo_token(probes[1])
    assert f"udp 1 UDP:10.0.0.12:4789,readbytes={len(token) + 1} {token} &" in script
    assert script.endswith("wait")
    assert parse_prober("PROBE 1 FAIL Connection refused\nPROBE 0 OK\nnoise\nPROBE 9 OK", 2) == [
        (True, ""),
        (False, "Connection refused"),
    ]
    assert parse_prober("", 1) == [(False, "the probe did not complete")]


@pytest.mark.parametrize(
    "address, expected",
    [("10.0.0.1", "UDP:10.0.0.1:4789"), ("fd00::1", "UDP6:[fd00::1]:4789"), ("node2.lan", "UDP:node2.lan:4789")],
)
def test_socat_address(address, expected):
    assert socat_address("udp", address, 4789) == expected


def test_engine_checks():
    checks = engine_checks(
        [
            engine("node1", swarm_state="active", swarm_cluster_id="abc"),
            engine("node2", memory_bytes=GIB),
            engine("node3", answered=False, error="Cannot connect to the Docker daemon"),
        ],
        memory_per_broker=int(1.5 * GIB),
    )
    by = {(c.check, c.to): c for c in checks}
    assert by["engine", "node1"].status == "note" and "active in swarm abc" in by["engine", "node1"].detail
    assert by["memory", "node1"].status == "ok"
    assert by["memory", "node2"].status == "failed" and "1.0 GiB total" in by["memory", "node2"].detail
    assert by["engine", "node3"].status == "failed"
    assert ("memory", "node3") not in by


def test_old_engine_fails():
    (check, _) = engine_checks([engine("node1", version="18.09.1")], GIB)
    assert check.status == "failed"


def test_reachability_failures_name_pair_port_and_fix_with_all_sources():
    checks = [
        reach("node1", "node3", 4789, "udp", ok=False),
        reach("node2", "node3", 4789, "udp", ok=False),
        reach("node1", "node2", 4789, "udp"),
        reach(CLIENT, "node3", 9094, "tcp", ok=False),
    ]
    report = build_report([engine(h.name) for h in HOSTS], checks, PORTS, HOSTS)
    assert not report.ok
    first = report.failures[0]
    assert (first.check, first.from_, first.to, first.port, first.protocol) == ("reachable", "node1", "node3", 4789, "udp")
    assert first.fix == "open 4789/udp inbound on node3 from node1, node2 (VXLAN overlay traffic)"
    assert report.failures[2].fix == "open 9094/tcp inbound on node3 from this machine (Kafka client listener)"
    assert first.summary == "node1 cannot reach node3 on 4789/udp (10.0.0.13: timed out)"


def test_port_in_use_fix():
    busy = Check("port_free", "failed", "node2", "", 9092, "tcp", "port 9092/tcp on node2 is already in use by another process")
    (failure,) = build_report([], [busy], PORTS, HOSTS).failures
    assert failure.fix == "stop or move what holds 9092/tcp on node2: the cluster needs it for the Kafka internal listener"
    assert failure.summary == "node2: port 9092/tcp on node2 is already in use by another process"


def test_engine_fix_names_the_endpoint():
    (failure,) = build_report([], engine_checks([engine("node2", answered=False, error="no")], GIB), PORTS, HOSTS).failures
    assert "unix:///n2.sock" in failure.fix


def test_notes_do_not_fail():
    note = Check("port_free", "note", "node1", "", 7946, "udp", "in use by this swarm")
    assert build_report([engine("node1")], [note], PORTS, HOSTS).ok


def test_json_shape():
    report = build_report([engine("node1")], [reach("node2", "node3", 7946, "tcp", ok=False)], PORTS, HOSTS, 2.5)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is False
    assert data["failures"][0] == {
        "check": "reachable",
        "from": "node2",
        "to": "node3",
        "port": 7946,
        "protocol": "tcp",
        "detail": "10.0.0.13: timed out",
        "fix": "open 7946/tcp inbound on node3 from node2 (swarm node gossip)",
    }
    assert data["engines"][0]["host"] == "node1"
    assert data["checks"][0]["from"] == "node2"


def test_error_for_commands_that_stop_on_failure():
    checks = [reach("node1", "node3", 4789, "udp", ok=False), reach("node2", "node3", 4789, "udp", ok=False)]
    error = build_report([], checks, PORTS, HOSTS).error()
    assert isinstance(error, PreflightError)
    assert error.message.startswith("preflight failed: node1 cannot reach node3 on 4789/udp")
    assert "1 more" in error.message
    assert error.hint.startswith("open 4789/udp inbound on node3")


def test_udp_without_reason_says_no_echo():
    assert _reach_detail(Probe("a", "b", "10.0.0.2", PORTS[3]), "") == f"10.0.0.2:4789: {NO_ECHO}"


def test_render_groups_failures_and_shows_the_matrix():
    checks = [
        Check("port_free", "ok", "node3", "", 4789, "udp"),
        reach("node1", "node3", 4789, "udp", ok=False),
        reach("node2", "node3", 4789, "udp", ok=False),
        Check("port_free", "failed", "node2", "", 9092, "tcp", "port 9092/tcp on node2 is already in use by another process"),
        Check("port_free", "note", "node1", "", 7946, "udp", "in use by this swarm"),
    ]
    report = build_report([engine(h.name) for h in HOSTS], checks, PORTS, HOSTS, 3.2)
    console = Console(record=True, width=220)
    print_preflight(report, console)
    text = console.export_text()
    assert "blocked from node1, node2" in text
    assert "open 4789/udp inbound on node3 from node1, node2 (VXLAN overlay traffic)" in text
    assert text.count("open 4789/udp inbound") == 1
    assert "in use by this swarm" in text
    assert "preflight failed: 3 failed checks" in text
