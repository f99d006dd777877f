"""The parsing layer of the Docker adapter, on JSON recorded from a sandbox (see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmkit.hosts.dockerapi import Availability, NodeRole, NodeState, SwarmState, TaskStatus, parse
from swarmkit.hosts.dockerapi.models import EngineInfo, ServiceSpec, SwarmNode
from swarmkit.ops import startup

FIXTURES = Path(__file__).parent / "fixtures"
MANAGER = "rm940idilsdi0dmvb032q2qhw"


def recorded(name: str):
    return json.loads((FIXTURES / name).read_text())


def test_engine_info_of_a_manager_names_its_swarm_and_cluster() -> None:
    info = parse.engine_info("unix:///rq1.sock", recorded("info_manager.json"))
    assert info == EngineInfo(
        "unix:///rq1.sock", "20.10.24+dfsg1", "rq1", "active", MANAGER, "o568ocel650ooawuxwnie99hc", 25276510208
    )


def test_a_worker_is_in_the_swarm_but_has_no_cluster_id() -> None:
    info = parse.engine_info("unix:///rq2.sock", recorded("info_worker.json"))
    assert (info.hostname, info.swarm_state, info.swarm_node_id, info.swarm_cluster_id) == (
        "rq2",
        "active",
        "50zyr95bssdrpvc2turyvjbrt",
        "",
    )


def test_an_engine_outside_a_swarm_is_inactive() -> None:
    info = parse.engine_info("unix:///rq1.sock", recorded("info_inactive.json"))
    assert (info.swarm_state, info.swarm_node_id, info.swarm_cluster_id) == ("inactive", "", "")


def test_info_without_a_server_reads_empty_so_the_caller_can_ask_why() -> None:
    """`docker info` to a TLS port over plain HTTP exits 0 with no server fields at all."""
    assert parse.engine_info("tcp://a:2376", {"ServerErrors": ["Client sent an HTTP request to an HTTPS server."]}) == (
        EngineInfo("tcp://a:2376", "", "", "inactive", "", "", 0)
    )


def test_nodes_carry_role_address_and_swarmkit_labels() -> None:
    nodes = {node.hostname: node for node in map(parse.swarm_node, recorded("nodes.json"))}
    assert nodes["rq1"] == SwarmNode(
        MANAGER,
        "rq1",
        "manager",
        "ready",
        "active",
        "10.214.0.11",
        {"swarmkit.broker-id": "1", "swarmkit.broker-id.next": "4", "swarmkit.host": "rq1"},
    )
    assert (nodes["rq3"].role, nodes["rq3"].address, nodes["rq3"].labels["swarmkit.broker-id"]) == ("worker", "10.214.0.13", "3")


def test_a_node_without_labels_status_or_description_reads_empty() -> None:
    """No status: its state is unknown and it is not available for tasks (paused) until Docker says otherwise."""
    node = parse.swarm_node({"ID": "n1", "Spec": {"Role": "worker"}})
    assert node == SwarmNode("n1", "", NodeRole.WORKER, NodeState.UNKNOWN, Availability.PAUSE, "", {})


def test_a_state_swarmkit_does_not_know_is_read_as_unknown() -> None:
    task = {"ID": "t1", "Slot": 1, "NodeID": "n1", "DesiredState": "running", "Status": {"State": "hibernating"}}
    (state,) = parse.service_state("kafka_broker", {"Spec": {}}, [task]).tasks
    assert (state.desired_state, state.state) == (TaskStatus.RUNNING, TaskStatus.UNKNOWN)


RECORDED_SERVICES = [
    ("service_broker.json", "tasks_broker.json"),
    ("service_paused.json", "tasks_paused.json"),
    ("service_job.json", "tasks_job.json"),
]


@pytest.mark.parametrize("service_file, tasks_file", RECORDED_SERVICES)
def test_every_recorded_task_state_is_a_known_member_with_docker_s_word(service_file: str, tasks_file: str) -> None:
    (service,) = recorded(service_file)
    raw = recorded(tasks_file)
    tasks = parse.service_state("svc", service, raw).tasks
    for task, document in zip(tasks, raw):
        assert TaskStatus.UNKNOWN not in (task.state, task.desired_state)
        assert (task.state.value, task.desired_state.value) == (document["Status"]["State"], document["DesiredState"])


def test_recorded_nodes_and_engines_parse_into_members() -> None:
    nodes = list(map(parse.swarm_node, recorded("nodes.json") + recorded("api_nodes.json")))
    assert {n.role for n in nodes} == {NodeRole.MANAGER, NodeRole.WORKER}
    assert {n.state for n in nodes} == {NodeState.READY} and {n.availability for n in nodes} == {Availability.ACTIVE}
    states = [
        parse.engine_info("e", recorded(f)).swarm_state for f in ("info_manager.json", "info_worker.json", "info_inactive.json")
    ]
    assert states == [SwarmState.ACTIVE, SwarmState.ACTIVE, SwarmState.INACTIVE]


def test_an_unknown_task_state_reads_as_a_phase_not_a_crash() -> None:
    task = {"ID": "t1", "Slot": 1, "NodeID": "n1", "DesiredState": "hibernating", "Status": {"State": "hibernating"}}
    (state,) = parse.service_state("kafka_broker", {"Spec": {}}, [task]).tasks
    assert startup.task_phase(state) == "task unknown"
    assert json.dumps([state.state, state.desired_state]) == '["unknown", "unknown"]'


def test_the_broker_service_state_has_one_running_current_task_per_node() -> None:
    (service,) = recorded("service_broker.json")
    state = parse.service_state("kafka_broker", service, recorded("tasks_broker.json"))
    assert (state.update_state, state.update_message) == ("", "")
    assert state.env["SWARMKIT_ADVERTISE"] == "hostname" and state.env["EXTERNAL_PORT"] == "9094"
    assert state.labels["swarmkit.engine"] == "tansu" and state.labels["swarmkit.topics"] == "orders:3:1"
    running = state.running_on(MANAGER)
    assert running is not None and running.container_id.startswith("2eccdc8a9e83")
    assert running.name == f"kafka_broker.{MANAGER}.{running.id}"  # a global service's task is named after its node
    assert len(state.tasks) == 3 and all(task.current and task.state == "running" for task in state.tasks)
    assert {task.image for task in state.tasks} == {"10.214.0.1:5000/swarmkit/tansu:0.6.0"}  # what status names a release by


def test_a_paused_update_and_its_rejected_tasks() -> None:
    (service,) = recorded("service_paused.json")
    state = parse.service_state("rqpause", service, recorded("tasks_paused.json"))
    assert state.update_state == "paused" and "update paused due to failure" in state.update_message
    rejected = [task for task in state.tasks if task.state == "rejected"]
    assert rejected and all(task.current and task.error.startswith("No such image") for task in rejected)
    (old,) = [task for task in state.tasks if not task.current]  # the task of the spec before the update
    assert (old.state, old.desired_state, old.name) == ("shutdown", "shutdown", f"rqpause.1.{old.id}")
    assert state.running_on(MANAGER) is None
    assert state.tasks_on(MANAGER)[0].created_at == max(task.created_at for task in state.tasks)


def test_a_failed_job_task_keeps_its_exit_error_and_container() -> None:
    (service,) = recorded("service_job.json")
    state = parse.service_state("rqfail", service, recorded("tasks_job.json"))
    (failed,) = [task for task in state.tasks if task.state == "failed"]
    assert (failed.error, failed.desired_state) == ("task: non-zero exit (3)", "shutdown")
    assert failed.container_id and failed.node_id == MANAGER
    assert state.labels == {} and state.env == {}


def test_a_service_without_tasks_labels_or_update_status() -> None:
    state = parse.service_state("bare", {"Spec": {"TaskTemplate": {"ContainerSpec": {"Image": "x"}}}}, [])
    assert (state.update_state, state.env, state.tasks, state.labels) == ("", {}, (), {})


def test_a_task_without_status_or_spec_is_not_current() -> None:
    task = parse.task_state("svc", {"ID": "t1", "Slot": 2}, parse.container_fingerprint({"Image": "x"}))
    assert (task.name, task.state, task.container_id, task.current) == ("svc.2.t1", TaskStatus.UNKNOWN, "", False)


def test_service_spec_reads_image_update_delay_and_labels() -> None:
    (service,) = recorded("service_broker.json")
    spec = parse.service_spec(service)
    assert spec.image == "10.214.0.1:5000/swarmkit/tansu:0.6.0" and spec.update_delay_ns == 10_000_000_000
    assert spec.labels["com.docker.stack.namespace"] == "kafka"
    assert parse.service_spec({"Spec": {}}) == ServiceSpec("", 0, {})


def test_task_spec_is_what_decides_a_task_replacement_pull_options_aside() -> None:
    (service,) = recorded("service_broker.json")
    spec = parse.task_spec(service)
    assert spec["TaskTemplate"]["ContainerSpec"]["Image"] == "10.214.0.1:5000/swarmkit/tansu:0.6.0"
    assert spec["EndpointSpec"] == service["Spec"].get("EndpointSpec")
    container = service["Spec"]["TaskTemplate"]["ContainerSpec"]
    pulled = {
        **service,
        "Spec": {
            **service["Spec"],
            "TaskTemplate": {
                **service["Spec"]["TaskTemplate"],
                "ContainerSpec": {**container, "PullOptions": {"RegistryAuth": "x"}},
            },
        },
    }
    assert parse.task_spec(pulled) == spec
    moved = {
        **service,
        "Spec": {
            **service["Spec"],
            "TaskTemplate": {**service["Spec"]["TaskTemplate"], "ContainerSpec": {**container, "Image": "other:1"}},
        },
    }
    assert parse.task_spec(moved) != spec


def secret_spec(secret: str) -> dict:
    return {"Image": "kafka", "Secrets": [{"SecretName": secret, "File": {"Name": "/run/secrets/broker.pem"}}]}


@pytest.mark.parametrize(
    "changed",
    [
        {"Image": "kafka:2"},
        {"Env": ["A=2"]},
        {"Mounts": [{"Source": "v", "Target": "/d", "ReadOnly": True}]},
        {"Configs": [{"ConfigName": "c2", "File": {"Name": "/c"}}]},
    ],
)
def test_a_changed_container_spec_makes_tasks_of_another_spec(changed: dict) -> None:
    base = {"Image": "kafka", "Env": ["A=1"], "Mounts": [{"Source": "v", "Target": "/d"}], "Configs": []}
    assert parse.container_fingerprint(base | changed) != parse.container_fingerprint(base)


def test_a_renewed_secret_makes_a_task_of_another_spec() -> None:
    assert parse.container_fingerprint(secret_spec("swarmkit-broker-1-aaaa")) != parse.container_fingerprint(
        secret_spec("swarmkit-broker-1-bbbb")
    )
    assert parse.container_fingerprint(secret_spec("swarmkit-broker-1-aaaa")) == parse.container_fingerprint(
        secret_spec("swarmkit-broker-1-aaaa")
    )


def test_a_service_container_and_what_it_publishes() -> None:
    (container,) = recorded("container_broker.json")
    container_id, state = parse.container_state(container)
    assert container_id.startswith("2eccdc8a9e83") and state == "running"
    assert parse.publisher(container) == (f"kafka_broker.{MANAGER}.b6w1grdvi0qxlt28lzmcj0fgc", "kafka_broker")


def test_a_paused_container_reads_paused_and_a_plain_one_has_no_service() -> None:
    assert parse.container_state({"Id": "c1", "State": {"Status": "running", "Paused": True}}) == ("c1", "paused")
    assert parse.container_state({"Id": "c2"}) == ("c2", "")
    assert parse.publisher({"Name": "/probe", "Config": {"Labels": None}}) == ("probe", "")


def test_names_by_label_value_from_volumes_and_services() -> None:
    volumes = [parse.volume_labels(volume) for volume in recorded("volumes.json")]
    (service,) = recorded("service_broker.json")
    label = "com.docker.stack.namespace"
    named = [*volumes, parse.service_labels(service), ("unlabelled", {})]
    assert parse.names_by_value(named, label) == {"kafka": ["kafka_broker", "kafka_identity"], "": ["unlabelled"]}
    assert parse.volume_labels({"Name": "v", "Labels": None}) == ("v", {})
    assert parse.service_labels({}) == ("", {})


def test_the_engine_api_gives_the_documents_the_cli_inspects() -> None:
    """Recorded through the Engine API (apache stack, 3 managers): the same parse functions read them."""
    info = parse.engine_info("unix:///node1.sock", recorded("api_info_manager.json"))
    assert (info.hostname, info.swarm_state, info.version) == ("node1", "active", "20.10.24+dfsg1")
    nodes = {node.hostname: node for node in map(parse.swarm_node, recorded("api_nodes.json"))}
    assert nodes["node1"].id == info.swarm_node_id and nodes["node2"].labels["swarmkit.broker-id"] == "2"
    state = parse.service_state("kafka_broker", recorded("api_service_broker.json"), recorded("api_tasks_broker.json"))
    assert {node.id for node in nodes.values()} == {task.node_id for task in state.tasks}
    assert all(state.running_on(node.id) for node in nodes.values()) and state.labels["swarmkit.engine"] == "apache"
    assert parse.container_state(recorded("api_container_controller.json"))[1] == "running"
