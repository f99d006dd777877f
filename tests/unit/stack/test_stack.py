"""The rendered stack: shape rules, escaping, stability, golden files and the example stacks.

Set SWARMKIT_UPDATE_GOLDEN=1 to rewrite the golden files and stacks/examples/ after an intended change.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.stack.compose import CONTAINER_LIB, StackRequest, swarm_escape
from swarmkit.stack.controllers import ControllerSet, directory_id
from swarmkit.stack.engines import ENGINES
from swarmkit.stack.engines.apache import generate_cluster_id
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.metrics import NODE_SERVICE, agent_entrypoint
from swarmkit.stack.render import build_stack, render, render_stack
from swarmkit.stack.topics import parse_topic_specs

GOLDEN = Path(__file__).parents[1] / "golden"
EXAMPLES = STACKS_DIR / "examples"
CLUSTER_ID = "c3dhcm1raXQtZXhhbXBsZQ"  # base64url of "swarmkit-example"
BOOTSTRAP = "controllers:9093,controller-1:9093,controller-2:9093,controller-3:9093"

# local-names.sh (as root: the container's addresses named, then appuser), metrics-agent.sh, then what the service starts
AGENT_ENTRY = ["/bin/sh", f"{CONTAINER_LIB}/local-names.sh", *agent_entrypoint([])]


def inventory(count: int = 3, managers: int = 1) -> Inventory:
    return Inventory(
        tuple(
            Host(f"node{i}", f"ssh://ops@10.231.0.{10 + i}", f"10.231.0.{10 + i}", "manager" if i <= managers else "worker")
            for i in range(1, count + 1)
        )
    )


def apache(**changes) -> StackRequest:
    return replace(StackRequest(inventory(), engine="apache", cluster_id=CLUSTER_ID), **changes)


def tansu(**changes) -> StackRequest:
    return replace(StackRequest(inventory(), engine="tansu"), **changes)


# What stacks/examples/ and tests/unit/golden/ hold, and the requests they are rendered from.
RENDERED = {
    EXAMPLES / "apache-3-servers.yaml": apache(
        inventory=inventory(3, managers=3), topics=parse_topic_specs("myTopic:3:3,anotherTopic:2:2")
    ),
    EXAMPLES / "tansu-3-servers.yaml": tansu(topics=parse_topic_specs("myTopic:3:1,anotherTopic:2:1")),
    GOLDEN / "apache-inventory-address.yaml": apache(advertise="inventory-address"),
    GOLDEN / "apache-command-ports.yaml": apache(
        inventory=inventory(5, managers=3),
        advertise="command",
        hostname_command="wget -qO- http://169.254.169.254/latest/meta-data/public-hostname",
        listeners=ListenerPlan.build(internal_port=19092, external_port=29094, controller_port=19093),
        extra_env=(("KAFKA_NUM_PARTITIONS", "6"),),
        stack_name="events",
    ),
    GOLDEN / "tansu-command-templates.yaml": tansu(
        advertise="command", hostname_command="echo {{.Node.Hostname}}-$HOSTNAME.example.com"
    ),
}


@pytest.mark.parametrize("path", sorted(RENDERED), ids=lambda p: p.name)
def test_rendered_files_are_in_sync(path: Path):
    text = render_stack(RENDERED[path])
    if os.environ.get("SWARMKIT_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} is stale: rerun with SWARMKIT_UPDATE_GOLDEN=1"


def test_examples_exist_for_every_engine():
    assert {path.name.split("-")[0] for path in EXAMPLES.glob("*.yaml")} == set(ENGINES)


@pytest.mark.parametrize("request_", list(RENDERED.values()), ids=[p.name for p in RENDERED])
def test_same_input_same_bytes(request_: StackRequest):
    assert render_stack(request_) == render_stack(replace(request_))


def _load(request: StackRequest) -> dict:
    return yaml.safe_load(render_stack(request))


@pytest.mark.parametrize("request_", list(RENDERED.values()), ids=[p.name for p in RENDERED])
def test_shape_rules(request_: StackRequest):
    text = render_stack(request_)
    assert "docker stack deploy -c " in text.split("\n\n")[0]
    assert "docker.sock" not in text
    doc = yaml.safe_load(text)
    assert doc["version"] == "3.8"
    broker = doc["services"]["broker"]
    assert broker["deploy"]["mode"] == "global"
    external = request_.listeners.external_listener.port
    assert broker["ports"] == [{"target": external, "published": external, "protocol": "tcp", "mode": "host"}]
    (network,) = doc["networks"]
    assert doc["networks"][network] == {"driver": "overlay", "attachable": True}
    for name, service in doc["services"].items():
        shared_name = {network: {"aliases": ["controllers"]}}  # a dynamic quorum's controllers
        assert service["networks"] in ([network], shared_name), name
        assert service["deploy"]["endpoint_mode"] == "dnsrr", name
        identity = {"type": "volume", "source": "identity", "target": "/swarmkit/identity", "read_only": True}
        assert identity in service["volumes"] or name == NODE_SERVICE, name  # the node exporter reads no identity
        for mount in service["volumes"]:
            assert mount["type"] == "volume" and mount["source"] in doc["volumes"], name
    assert doc["volumes"]["identity"] == {"driver": "local"}
    for name, service in doc["services"].items():
        for key in ("entrypoint", "command"):
            assert len(" ".join(service.get(key) or ())) < 300, (name, key)  # scripts are files, never inline
        for config in service.get("configs", ()):
            assert doc["configs"][config["source"]] == {"file": f"./{Path(config['target']).name}"}, name


def test_every_dollar_is_escaped_for_compose():
    for request_ in RENDERED.values():
        body = render_stack(request_).split("\n\n", 1)[1]
        assert "$" not in body.replace("$$", ""), "compose would interpolate a single $"


def _swarm_expand(value: str, **context: str) -> str:
    """The little of Go's text/template that swarm applies to env values here."""

    def action(match: re.Match) -> str:
        inner = match.group(1).strip()
        if inner.startswith('"'):
            return inner.strip('"')
        return context[inner]

    return re.sub(r"\{\{(.*?)\}\}", action, value)


def test_hostname_command_templates_reach_the_container_literally():
    command = "echo {{.Node.Hostname}}-$HOSTNAME.example.com"
    env = _load(tansu(advertise="command", hostname_command=command))["services"]["broker"]["environment"]
    env = {key: value.replace("$$", "$") for key, value in env.items()}  # what compose hands to swarm
    assert _swarm_expand(env["HOSTNAME_COMMAND"]) == command
    assert _swarm_expand(env["SWARMKIT_NODE_HOSTNAME"], **{".Node.Hostname": "node2"}) == "node2"


@pytest.mark.parametrize("value", ["plain", "{{", "a{{b}}c{{{d", "}}{{.X}}"])
def test_swarm_escape_round_trips(value):
    assert _swarm_expand(swarm_escape(value)) == value


def test_topics_travel_only_as_a_service_label():
    doc = _load(tansu(topics=parse_topic_specs("a:3:1,b:2:1:compact")))
    broker = doc["services"]["broker"]
    assert broker["deploy"]["labels"]["swarmkit.topics"] == "a:3:1,b:2:1:cleanup.policy=compact"
    assert "labels" not in broker  # container labels would restart every task when topics change
    assert not any("TOPIC" in key for key in broker["environment"])


def _controllers(doc: dict) -> dict[str, dict]:
    return {name: svc for name, svc in doc["services"].items() if name.startswith("controller-")}


def test_apache_controllers_on_each_manager_in_a_dynamic_quorum():
    doc = _load(apache(inventory=inventory(4, managers=3)))
    controllers = _controllers(doc)
    assert list(controllers) == ["controller-1", "controller-2", "controller-3"]
    initial = [f"900{i}@controller-{i}:9093:{directory_id(CLUSTER_ID, 9000 + i)}" for i in (1, 2, 3)]
    for index, (name, service) in enumerate(controllers.items(), start=1):
        env = service["environment"]
        assert env["KAFKA_NODE_ID"] == str(9000 + index)
        assert env["KAFKA_PROCESS_ROLES"] == "controller"
        assert env["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == BOOTSTRAP
        assert "KAFKA_CONTROLLER_QUORUM_VOTERS" not in env
        assert env["SWARMKIT_INITIAL_CONTROLLERS"] == ",".join(initial)  # the same on every controller
        assert env["KAFKA_LISTENERS"] == "CONTROLLER://:9093"
        assert service["hostname"] == name  # the endpoint it registers as a voter
        assert service["networks"] == {"internal": {"aliases": ["controllers"]}}
        assert "KAFKA_ADVERTISED_LISTENERS" not in env  # the image refuses it on a controller
        assert env["CLUSTER_ID"] == CLUSTER_ID
        assert service["entrypoint"] == [*AGENT_ENTRY, "/bin/sh", f"{CONTAINER_LIB}/controller.sh"]
        assert service["deploy"]["mode"] == "replicated" and service["deploy"]["replicas"] == 1
        assert service["deploy"]["placement"]["constraints"] == [f"node.hostname == node{index}"]
        assert "ports" not in service
    env = doc["services"]["broker"]["environment"]
    assert env["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == BOOTSTRAP
    assert env["KAFKA_PROCESS_ROLES"] == "broker"
    assert "KAFKA_NODE_ID" not in env  # per node, from the identity volume


def test_a_kept_static_quorum_renders_as_before():
    managers = ["node1", "node2", "node3"]
    doc = _load(apache(inventory=inventory(4, managers=3), controllers=ControllerSet.static(managers)))
    voters = "9001@controller-1:9093,9002@controller-2:9093,9003@controller-3:9093"
    for service in [*_controllers(doc).values(), doc["services"]["broker"]]:
        env = service["environment"]
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == voters
        assert "KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS" not in env and "SWARMKIT_INITIAL_CONTROLLERS" not in env
        assert service["networks"] == ["internal"] and "hostname" not in service
    for service in _controllers(doc).values():  # the image formats them: its own start script after the two steps
        assert service["entrypoint"] == [*AGENT_ENTRY, "/etc/kafka/docker/run"]


def test_a_replaced_controller_changes_no_other_service():
    first = ControllerSet.first(["node1", "node2", "node3"])
    before = build_stack(apache(inventory=inventory(4, managers=3), controllers=first))
    after = build_stack(apache(inventory=inventory(4, managers=3), controllers=first.replaced("node2", "node4")))
    assert list(_controllers(after)) == ["controller-1", "controller-3", "controller-4"]
    assert after["services"]["controller-4"]["deploy"]["placement"]["constraints"] == ["node.hostname == node4"]
    assert after["services"]["controller-4"]["environment"]["KAFKA_NODE_ID"] == "9004"
    for name in ("broker", "controller-1", "controller-3"):
        assert after["services"][name] == before["services"][name], name


@pytest.mark.parametrize("brokers, factor, min_isr", [(1, 1, 1), (2, 2, 1), (3, 3, 2), (7, 3, 2)])
def test_replication_defaults_follow_broker_count(brokers, factor, min_isr):
    env = _load(apache(inventory=inventory(brokers)))["services"]["broker"]["environment"]
    assert env["KAFKA_DEFAULT_REPLICATION_FACTOR"] == str(factor)
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == str(factor)
    assert env["KAFKA_MIN_INSYNC_REPLICAS"] == str(min_isr)
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == str(min_isr)


@pytest.mark.parametrize("make", [apache, tansu], ids=["apache", "tansu"])
def test_adding_a_worker_leaves_every_service_unchanged(make):
    before = build_stack(make(inventory=inventory(3)))
    after = build_stack(make(inventory=inventory(4)))
    assert after["services"] == before["services"]


def _run_entrypoint(
    tmp_path: Path, env_changes: dict[str, str], identity: str | None, path: str = os.environ["PATH"]
) -> subprocess.CompletedProcess:
    """Run the apache broker's entrypoint as `render -o` writes it, templates filled in as swarm would."""
    stack = render(apache(**env_changes))
    directory = stack.write(tmp_path / "stack").parent
    document = yaml.safe_load(stack.text)
    broker = document["services"]["broker"]
    mounted = {c["target"]: str(directory / document["configs"][c["source"]]["file"]) for c in broker["configs"]}
    context = {".Node.Hostname": "node2", ".Task.Name": "kafka_broker.n2.t7"}
    env = {key: _swarm_expand(value.replace("$$", "$"), **context) for key, value in broker["environment"].items()}
    recorder = tmp_path / "record.sh"
    recorder.write_text('#!/bin/sh\nenv | grep ^KAFKA_ | sort > "$RECORD"\n')
    recorder.chmod(0o755)
    identity_file = tmp_path / "node.env"
    if identity is not None:
        identity_file.write_text(identity)
    env.update(
        SWARMKIT_IDENTITY_FILE=str(identity_file),
        KAFKA_START_COMMAND=str(recorder),
        RECORD=str(tmp_path / "record.txt"),
        PATH=path,
        SWARMKIT_LIB=mounted[f"{CONTAINER_LIB}/node-identity.sh"],
    )
    assert broker["entrypoint"][:2] == ["/bin/sh", f"{CONTAINER_LIB}/local-names.sh"]
    command = [mounted.get(argument, argument) for argument in broker["entrypoint"][2:]]  # this machine's /etc/hosts stays
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=20)


def _recorded(tmp_path: Path) -> dict[str, str]:
    lines = (tmp_path / "record.txt").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize(
    "changes, external",
    [
        ({}, "node2"),
        ({"advertise": "inventory-address"}, "10.231.0.12"),
        (
            {"advertise": "command", "hostname_command": "echo {{.Node.Hostname}}.$((40+2)).example"},
            "{{.Node.Hostname}}.42.example",
        ),
    ],
    ids=["hostname", "inventory-address", "command"],
)
def test_rendered_entrypoint_configures_kafka(tmp_path, changes, external):
    result = _run_entrypoint(tmp_path, changes, "BROKER_ID=7\nNODE_ADDRESS=10.231.0.12\n")
    if "{{" in external:
        # '{' is not a host character: the entrypoint refuses it, which proves the command got it literally
        assert result.returncode == 64 and "'{{.Node.Hostname}}.42.example' is not a host name" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    recorded = _recorded(tmp_path)
    assert recorded["KAFKA_NODE_ID"] == "7"
    assert recorded["KAFKA_ADVERTISED_LISTENERS"] == f"INTERNAL://kafka_broker.n2.t7:9092,EXTERNAL://{external}:9094"
    assert recorded["KAFKA_LISTENERS"] == "INTERNAL://:9092,EXTERNAL://:9094"
    assert recorded["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == "controllers:9093,controller-1:9093"  # one manager
    assert "KAFKA_START_COMMAND" not in recorded  # it would become a bogus server property


def test_rendered_entrypoint_awaits_only_the_controllers_shared_name(tmp_path):
    """The initial controllers' own names may be gone after replace-node; the shared name always answers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    probed = tmp_path / "probed.txt"
    fake_nc = bin_dir / "nc"
    fake_nc.write_text(
        f'#!/bin/sh\n[ "$1" = -h ] && {{ echo " -z zero-I/O mode"; exit 0; }}\necho "$*" >>{probed}\n'
        'case " $* " in *" controllers 9093 "*) exit 0 ;; esac\nexit 1\n'
    )
    fake_nc.chmod(0o755)
    result = _run_entrypoint(tmp_path, {}, "BROKER_ID=3\n", path=f"{bin_dir}:{os.environ['PATH']}")
    assert result.returncode == 0, result.stderr
    assert "controller quorum listening (1 of 1 voters)" in result.stderr
    assert probed.read_text().splitlines()[-1] == "-z -w 2 controllers 9093"


def test_rendered_entrypoint_hostname_command_output(tmp_path):
    result = _run_entrypoint(
        tmp_path, {"advertise": "command", "hostname_command": "echo $((40+2)).example.com"}, "BROKER_ID=3\n"
    )
    assert result.returncode == 0, result.stderr
    assert _recorded(tmp_path)["KAFKA_ADVERTISED_LISTENERS"].endswith("EXTERNAL://42.example.com:9094")


@pytest.mark.parametrize(
    "identity, words",
    [
        (None, "no BROKER_ID in"),
        ("NODE_ADDRESS=10.0.0.1\n", "no BROKER_ID in"),
        ("BROKER_ID=x1\n", "is not a whole number"),
        ("BROKER_ID=9001\n", "outside 1..9000"),
    ],
)
def test_rendered_entrypoint_fails_clearly_without_a_broker_id(tmp_path, identity, words):
    result = _run_entrypoint(tmp_path, {}, identity)
    assert result.returncode == 64
    assert words in result.stderr
    assert not (tmp_path / "record.txt").exists()


@pytest.mark.parametrize(
    "request_, words",
    [
        (apache(engine="kafka2"), "engine: unknown engine 'kafka2'"),
        (apache(cluster_id=None), "CLUSTER_ID: the apache engine needs a cluster id"),
        (apache(cluster_id="not-a-uuid"), "CLUSTER_ID: 'not-a-uuid'"),
        (apache(inventory=inventory(3, managers=0)), "no manager"),
        (apache(inventory=Inventory(())), "inventory: no hosts"),
        (apache(advertise="dns"), "advertise: unknown mode 'dns'"),
        (apache(advertise="command"), "needs a HOSTNAME_COMMAND"),
        (apache(hostname_command="hostname -f"), "advertise mode is 'hostname'"),
        (apache(advertise="command", hostname_command="a\nb"), "must be one line"),
        (apache(topics=parse_topic_specs("a:3:5")), "5 replicas but only 3 broker(s)"),
        (apache(topics=parse_topic_specs("bad name!:1:1")), "illegal characters"),
        (apache(topics=parse_topic_specs("x:0:1")), "partitions must be at least 1"),
        (tansu(topics=parse_topic_specs("a:3:2")), "every tansu broker is its own"),
        (tansu(replication_factor=0), "default.replication.factor: 0"),
        (tansu(replication_factor=3), "every tansu broker is its own"),
        (apache(replication_factor=-1), "default.replication.factor: -1"),
        (tansu(listeners=ListenerPlan.build(external_protocol="SSL")), "tansu serves EXTERNAL only as PLAINTEXT"),
        (apache(listeners=ListenerPlan.build(external_port=9092)), "listeners: port 9092"),
        (apache(stack_name="Kafka!"), "stack name 'Kafka!'"),
        (apache(image=""), "image ''"),
        (apache(replication_factor=4), "default.replication.factor: 4"),
        (apache(extra_env=(("KAFKA_LISTENERS", "x"),)), "KAFKA_LISTENERS is set by swarmkit"),
        (apache(extra_env=(("BAD-NAME", "x"),)), "'BAD-NAME' is not a valid variable name"),
    ],
)
def test_bad_requests_raise_spec_error(request_, words):
    with pytest.raises(SpecError) as err:
        render_stack(request_)
    assert words in err.value.message
    assert err.value.hint


def test_extra_env_is_passed_and_swarm_escaped():
    env = _load(tansu(extra_env={"STORAGE_ENGINE": "memory://{{x}}/"}))["services"]["broker"]["environment"]
    assert env["STORAGE_ENGINE"] == 'memory://{{"{{"}}x}}/'


def test_request_normalises_sequences():
    request_ = tansu(topics=parse_topic_specs("a:1:1"), extra_env={"A": "1"})
    assert request_.topics == tuple(parse_topic_specs("a:1:1"))
    assert request_.extra_env == (("A", "1"),)
    assert request_.broker_service == "kafka_broker"
    assert request_.identity_volume == "kafka_identity"


def test_generated_cluster_ids_are_valid_and_distinct():
    first, second = generate_cluster_id(), generate_cluster_id()
    assert first != second
    render_stack(apache(cluster_id=first))


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch):
    """kafka-storage format --cluster-id -irYL... takes the id for an option: every broker exits 1."""
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(drawn))
    assert generate_cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"  # the id starting with '-' was drawn again
    with pytest.raises(SpecError, match="is not a KRaft cluster id") as refused:
        render_stack(apache(cluster_id="-irYLBS2RHShMbu9wYZRiw"))
    assert "not starting with '-'" in refused.value.hint


def test_the_registry_names_each_engine_by_its_own_name():
    assert ENGINES and all(engine.NAME == name for name, engine in ENGINES.items())  # mypy checks the rest of the contract


def test_container_scripts_are_configs_named_after_their_content():
    stack = render(apache())
    broker = yaml.safe_load(stack.text)["services"]["broker"]
    assert broker["entrypoint"] == [*AGENT_ENTRY, "/bin/sh", f"{CONTAINER_LIB}/entrypoint.sh"]
    assert [(c["target"], c["mode"]) for c in broker["configs"]] == [
        (f"{CONTAINER_LIB}/local-names.sh", 0o555),
        (f"{CONTAINER_LIB}/node-identity.sh", 0o555),
        (f"{CONTAINER_LIB}/entrypoint.sh", 0o555),
        (f"{CONTAINER_LIB}/jmx-exporter.yml", 0o555),
        (f"{CONTAINER_LIB}/metrics-agent.sh", 0o555),
    ]
    assert "        mode: 0555\n" in stack.text
    sources = (
        STACKS_DIR / "apache" / "local-names.sh",
        STACKS_DIR / "node-identity.sh",
        STACKS_DIR / "apache" / "entrypoint.sh",
        STACKS_DIR / "apache" / "controller.sh",
        STACKS_DIR / "apache" / "jmx-exporter.yml",
        STACKS_DIR / "apache" / "metrics-agent.sh",
    )
    for config, source in zip(stack.files, sources, strict=True):
        assert config.name == f"{source.stem}-{hashlib.sha256(source.read_bytes()).hexdigest()[:8]}"
    changed = replace(stack.files[1], content=stack.files[1].content + "\n")
    assert changed.name != stack.files[1].name and changed.target == stack.files[1].target
    assert render(apache()) == stack  # unchanged scripts: the same names, so a redeploy changes nothing


def test_render_writes_a_directory_deployable_by_hand(tmp_path: Path):
    stack = render(apache())
    path = stack.write(tmp_path / "out")
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "controller.sh",
        "entrypoint.sh",
        "jmx-exporter.yml",
        "local-names.sh",
        "metrics-agent.sh",
        "node-identity.sh",
        "stack.yml",
    ]
    assert path.read_text() == stack.text
    assert (path.parent / "entrypoint.sh").read_text() == (STACKS_DIR / "apache" / "entrypoint.sh").read_text()
    assert [p.name for p in render(tansu()).write(tmp_path / "tansu").parent.iterdir()] == ["stack.yml"]


@pytest.mark.skipif(not shutil.which("docker"), reason="no docker CLI")
@pytest.mark.parametrize("path", sorted(RENDERED), ids=lambda p: p.name)
def test_docker_stack_config_accepts_rendered_files(path: Path):
    """`docker stack config` parses and interpolates on the client side: no engine is contacted."""
    env = {key: value for key, value in os.environ.items() if key != "DOCKER_HOST"}
    result = subprocess.run(["docker", "stack", "config", "-c", str(path)], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    original = yaml.safe_load(path.read_text())
    for name, service in original["services"].items():
        for key, value in service.get("environment", {}).items():
            assert config["services"][name]["environment"][key] == value.replace("$$", "$"), (name, key)


def test_sandbox_and_real_servers_differ_in_the_image_only():
    """The sandbox's own Kafka image honours the official image's contract, and the JMX exporter is no content of
    either (it comes in a volume), so nothing else changes."""
    servers = StackRequest(inventory(3, managers=3), cluster_id=CLUSTER_ID, topics=parse_topic_specs("orders:6:3"))
    sandbox = replace(servers, image="10.231.0.1:5000/swarmkit/kafka:4.4.0")
    official, ours = yaml.safe_load(render_stack(servers)), yaml.safe_load(render_stack(sandbox))
    assert official["services"]["broker"]["environment"]["SWARMKIT_METRICS_AGENT"].startswith("-javaagent:")
    for name, service in ours["services"].items():
        if name != NODE_SERVICE:  # the node exporter runs from the probe image on both
            assert service["image"] == "10.231.0.1:5000/swarmkit/kafka:4.4.0"
            service["image"] = "apache/kafka:4.4.0"
    assert ours == official


def test_heap_defaults_can_be_raised_for_real_servers():
    request = StackRequest(inventory(3), cluster_id=CLUSTER_ID, extra_env={"KAFKA_HEAP_OPTS": "-Xmx4g -Xms4g"})
    broker = build_stack(request)["services"]["broker"]["environment"]
    assert broker["KAFKA_HEAP_OPTS"] == "-Xmx4g -Xms4g"
    assert (
        build_stack(replace(request, extra_env=()))["services"]["broker"]["environment"]["KAFKA_HEAP_OPTS"] == "-Xmx512m -Xms512m"
    )


def test_controllers_write_fewer_no_op_records_through_the_images_variables():
    """An idle cluster's largest cost is the metadata no-op record; the controllers write one every 5 s, not 500 ms."""
    services = build_stack(StackRequest(inventory(3, managers=3), cluster_id=CLUSTER_ID))["services"]
    for name in ("controller-1", "controller-2", "controller-3"):
        assert services[name]["environment"]["KAFKA_METADATA_MAX_IDLE_INTERVAL_MS"] == "5000"
    assert "KAFKA_METADATA_MAX_IDLE_INTERVAL_MS" not in services["broker"]["environment"]  # a controller setting


def test_a_silent_broker_is_fenced_after_6_s_of_heartbeats_every_second():
    """The controllers' session (Kafka: 9 s) and the brokers' heartbeat (2 s), shortened together (docs/drills.md)."""
    services = build_stack(StackRequest(inventory(3, managers=3), cluster_id=CLUSTER_ID))["services"]
    for name in ("controller-1", "controller-2", "controller-3"):
        assert services[name]["environment"]["KAFKA_BROKER_SESSION_TIMEOUT_MS"] == "6000"
    assert services["broker"]["environment"]["KAFKA_BROKER_HEARTBEAT_INTERVAL_MS"] == "1000"
    slower = StackRequest(
        inventory(3, managers=3), cluster_id=CLUSTER_ID, extra_env=(("KAFKA_BROKER_HEARTBEAT_INTERVAL_MS", "2000"),)
    )
    assert build_stack(slower)["services"]["broker"]["environment"]["KAFKA_BROKER_HEARTBEAT_INTERVAL_MS"] == "2000"
