"""Inventory loading: every mistake is one line naming the file, the host and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from swarmkit.errors import InventoryError
from swarmkit.hosts.inventory import Host, Inventory, StackDefaults, TlsFiles, load_inventory
from swarmkit.hosts.roles import NodeRole

SANDBOX_INVENTORY = """\
# Inventory of swarmkit sandbox 'sk'
stack:
  engine: tansu
  image: 10.231.0.1:5000/swarmkit/tansu:0.6.0
  probe_image: 10.231.0.1:5000/swarmkit/probe:1
hosts:
- name: node1
  endpoint: unix:///var/tmp/swarmkit/sandbox/sk/node1/docker.sock
  address: 10.231.0.11
  role: manager
- name: node2
  endpoint: unix:///var/tmp/swarmkit/sandbox/sk/node2/docker.sock
  address: 10.231.0.12
  role: worker
- name: node3
  endpoint: unix:///var/tmp/swarmkit/sandbox/sk/node3/docker.sock
  address: 10.231.0.13
  role: worker
"""


def base_document() -> dict:
    return yaml.safe_load(SANDBOX_INVENTORY)


def write(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False))
    return path


def load_error(tmp_path: Path, document: object) -> InventoryError:
    path = write(tmp_path, document)
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    error = caught.value
    assert "\n" not in error.message
    assert error.message.startswith(f"{path}: ")
    return error


def with_host(index: int, **changes) -> dict:
    document = base_document()
    document["hosts"][index].update(changes)
    return document


def test_sandbox_inventory_loads_into_typed_objects(tmp_path):
    inventory = load_inventory(write(tmp_path, SANDBOX_INVENTORY))
    assert isinstance(inventory, Inventory)
    assert inventory.path == str(tmp_path / "inventory.yaml")
    assert inventory.stack == StackDefaults("tansu", "10.231.0.1:5000/swarmkit/tansu:0.6.0", "10.231.0.1:5000/swarmkit/probe:1")
    assert [h.name for h in inventory.hosts] == ["node1", "node2", "node3"]
    assert inventory.first_manager == Host(
        "node1", "unix:///var/tmp/swarmkit/sandbox/sk/node1/docker.sock", "10.231.0.11", "manager"
    )
    assert inventory.host("node3").role == "worker"
    assert [h.role for h in inventory.hosts] == [NodeRole.MANAGER, NodeRole.WORKER, NodeRole.WORKER]
    assert all(type(h.role) is NodeRole for h in inventory.hosts)
    assert not inventory.allow_even_managers


def test_optional_fields_have_defaults(tmp_path):
    document = {
        "hosts": [
            {"name": "a", "endpoint": "ssh://ops@a.example.com", "address": "a.example.com", "role": "manager"},
            {"name": "b", "endpoint": "ssh://ops@b.example.com:2222", "address": "fd00::2"},
        ]
    }
    inventory = load_inventory(write(tmp_path, document))
    assert inventory.stack == StackDefaults()
    assert inventory.host("b") == Host("b", "ssh://ops@b.example.com:2222", "fd00::2", "worker", {}, False, None)


def test_labels_are_kept(tmp_path):
    inventory = load_inventory(write(tmp_path, with_host(1, labels={"zone": "a", "disk": "ssd"})))
    assert inventory.host("node2").labels == {"zone": "a", "disk": "ssd"}


def test_tls_endpoint_keeps_its_files_resolved_against_the_inventory(tmp_path):
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    document = with_host(2, endpoint="tcp://10.0.0.13:2376", tls={"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem"})
    host = load_inventory(write(tmp_path, document)).host("node3")
    assert host.tls == TlsFiles(str(tmp_path / "ca.pem"), str(tmp_path / "cert.pem"), str(tmp_path / "key.pem"))


def test_plain_tcp_is_accepted_on_loopback_or_when_declared_insecure(tmp_path):
    document = base_document()
    document["hosts"][1]["endpoint"] = "tcp://127.0.0.1:2375"
    document["hosts"][2].update(endpoint="tcp://10.0.0.13:2375", insecure=True)
    inventory = load_inventory(write(tmp_path, document))
    assert inventory.host("node3").insecure


def test_even_managers_allowed_when_explicit(tmp_path):
    document = with_host(1, role="manager")
    document["allow_even_managers"] = True
    assert len(load_inventory(write(tmp_path, document)).managers) == 2


def test_missing_file(tmp_path):
    with pytest.raises(InventoryError, match=r"nope\.yaml: no such file"):
        load_inventory(tmp_path / "nope.yaml")


def test_not_yaml(tmp_path):
    error = load_error(tmp_path, "hosts: [\n  - name: a\n  bad")
    assert "is not valid YAML" in error.message


@pytest.mark.parametrize("document", ["just a string", "- a\n- b\n", ""])
def test_not_a_mapping(tmp_path, document):
    assert "must be a YAML mapping" in load_error(tmp_path, document).message


@pytest.mark.parametrize("hosts", [None, [], "node1"])
def test_hosts_must_be_a_non_empty_list(tmp_path, hosts):
    assert "field 'hosts': must be a non-empty list" in load_error(tmp_path, {"hosts": hosts}).message


def test_host_entry_must_be_a_mapping(tmp_path):
    document = base_document()
    document["hosts"].append("node4")
    assert "host #4: must be a mapping" in load_error(tmp_path, document).message


@pytest.mark.parametrize("missing", ["endpoint", "address"])
def test_missing_field_names_host_and_field(tmp_path, missing):
    document = base_document()
    del document["hosts"][1][missing]
    assert load_error(tmp_path, document).message.endswith(f"host 'node2': field '{missing}': is missing")


def test_missing_name_names_the_entry_by_position(tmp_path):
    document = base_document()
    del document["hosts"][2]["name"]
    assert load_error(tmp_path, document).message.endswith("host #3: field 'name': is missing")


def test_unknown_host_field(tmp_path):
    document = base_document()
    document["hosts"][1]["adress"] = document["hosts"][1].pop("address")
    assert "host 'node2': field 'adress': unknown field" in load_error(tmp_path, document).message


def test_unknown_top_level_and_stack_fields(tmp_path):
    document = base_document()
    document["host"] = []
    assert "field 'host': unknown field" in load_error(tmp_path, document).message
    document = base_document()
    document["stack"]["imag"] = "x"
    assert "field 'stack.imag': unknown field" in load_error(tmp_path, document).message


def test_field_of_wrong_type(tmp_path):
    assert "host 'node2': field 'address': 12 is not a string" in load_error(tmp_path, with_host(1, address=12)).message


def test_invalid_host_name(tmp_path):
    assert "field 'name': host name 'no spaces' is not valid" in load_error(tmp_path, with_host(1, name="no spaces")).message


def test_unknown_role(tmp_path):
    error = load_error(tmp_path, with_host(1, role="leader"))
    assert error.message.endswith("host 'node2': field 'role': unknown role 'leader' (known: manager, worker)")


@pytest.mark.parametrize("address", ["10.0.0.300", "1.2.3", "bad_name", "-x.example.com", "a..b"])
def test_bad_address(tmp_path, address):
    error = load_error(tmp_path, with_host(1, address=address))
    assert (
        error.message
        == f"{tmp_path / 'inventory.yaml'}: host 'node2': field 'address': '{address}' is not an IP address or host name"
    )


def test_duplicate_names(tmp_path):
    error = load_error(tmp_path, with_host(2, name="node2"))
    assert error.message.endswith("host #3: field 'name': 'node2' is already used by host 'node2'")


def test_duplicate_addresses(tmp_path):
    error = load_error(tmp_path, with_host(2, address="10.231.0.12"))
    assert error.message.endswith("host 'node3': field 'address': '10.231.0.12' is already used by host 'node2'")


def test_duplicate_endpoints(tmp_path):
    document = with_host(2, endpoint="unix:///var/tmp/swarmkit/sandbox/sk/node1/docker.sock")
    assert "host 'node3': field 'endpoint': " in load_error(tmp_path, document).message


def test_no_manager(tmp_path):
    error = load_error(tmp_path, with_host(0, role="worker"))
    assert error.message.endswith("field 'role': no host is a manager")


def test_even_number_of_managers_needs_the_override(tmp_path):
    error = load_error(tmp_path, with_host(1, role="manager"))
    assert "field 'role': 2 managers (node1, node2)" in error.message
    assert "allow_even_managers: true" in error.hint


def test_override_must_be_boolean(tmp_path):
    document = base_document()
    document["allow_even_managers"] = "yes please"
    assert "field 'allow_even_managers'" in load_error(tmp_path, document).message


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://10.0.0.12:2375",
        "node2:2375",
        "ssh://10.0.0.12",
        "ssh://ops:secret@10.0.0.12",
        "tcp://10.0.0.12",
        "tcp://10.0.0.12:2376/path",
        "unix://relative.sock",
        "unix:///",
    ],
)
def test_bad_endpoint_forms(tmp_path, endpoint):
    error = load_error(tmp_path, with_host(1, endpoint=endpoint))
    assert f"host 'node2': field 'endpoint': '{endpoint}' is not one of ssh://user@host[:port]" in error.message


@pytest.mark.parametrize(
    "endpoint",
    ["tcp://10.0.0.12:0", "ssh://ops@10.0.0.12:0", "tcp://10.0.0.12:70000", "tcp://10.0.0.12:notaport", "tcp://h:٢٣٧٦"],
)
def test_an_endpoint_port_outside_1_to_65535_is_named(tmp_path, endpoint):
    error = load_error(tmp_path, with_host(1, endpoint=endpoint, insecure=True))
    assert f"field 'endpoint': '{endpoint}': its port is not a number from 1 to 65535" in error.message


def test_plain_tcp_to_another_machine_needs_insecure(tmp_path):
    error = load_error(tmp_path, with_host(1, endpoint="tcp://10.0.0.12:2375"))
    assert "host 'node2': field 'endpoint': 'tcp://10.0.0.12:2375' is plain-text TCP" in error.message
    assert "insecure: true" in error.hint


def test_insecure_must_be_boolean(tmp_path):
    assert "field 'insecure': 'yes' is not true or false" in load_error(tmp_path, with_host(1, insecure="yes")).message


def test_tls_files_must_exist(tmp_path):
    document = with_host(1, endpoint="tcp://10.0.0.12:2376", tls={"ca": "ca.pem", "cert": "cert.pem", "key": "key.pem"})
    assert "host 'node2': field 'tls.ca': no such file" in load_error(tmp_path, document).message


def test_tls_needs_all_three_files(tmp_path):
    document = with_host(1, endpoint="tcp://10.0.0.12:2376", tls={"ca": "ca.pem"})
    (tmp_path / "ca.pem").write_text("x")
    assert "field 'tls.cert': is missing" in load_error(tmp_path, document).message


@pytest.mark.parametrize("labels", [["zone=a"], {"zone": 1}, {"ssd": True}])
def test_labels_must_be_a_string_map(tmp_path, labels):
    assert "host 'node2': field 'labels'" in load_error(tmp_path, with_host(1, labels=labels)).message


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("name", "node1\n"),
        ("address", "10.231.0.11\n"),
        ("address", "node1.example\n"),
        ("endpoint", "unix:///var/run/docker.sock\n"),
        ("endpoint", "ssh://ops@node1\n"),
        ("labels", {"zone": "a\n"}),
        ("labels", {"app": "web\x00"}),
    ],
)
def test_a_trailing_newline_or_control_character_is_refused_shown_escaped(tmp_path, field, text):
    """`^...$` with re.match let a final newline through (a host name rendered a stack that was not YAML)."""
    error = load_error(tmp_path, with_host(0, **{field: text}))
    assert "\\n" in error.message or "\\x00" in error.message


@pytest.mark.parametrize("key", ["swarmkit.broker-id", "swarmkit.host", "Swarmkit.cluster-id.kafka", "swarmkit"])
def test_swarmkits_own_labels_cannot_be_given(tmp_path, key):
    """An inventory label swarmkit.broker-id: '99' once overwrote that node's broker id on `swarm up`, exit 0."""
    error = load_error(tmp_path, with_host(1, labels={"zone": "a", key: "99"}))
    assert "field 'labels'" in error.message and "swarmkit's own namespace" in error.message
    assert "choose another name" in error.hint


def test_yaml_merge_keys_are_read_as_yaml_means_them(tmp_path):
    text = """\
hosts:
  - &node {name: node1, endpoint: "unix:///a/docker.sock", address: 10.0.0.1, role: manager, labels: {zone: a}}
  - <<: *node
    name: node2
    endpoint: unix:///b/docker.sock
    address: 10.0.0.2
    role: worker
"""
    inventory = load_inventory(write(tmp_path, text))
    assert [(h.name, h.role, h.labels) for h in inventory.hosts] == [
        ("node1", "manager", {"zone": "a"}),
        ("node2", "worker", {"zone": "a"}),
    ]
    error = load_error(tmp_path, text + "    address: 10.0.0.3\n")
    assert "key 'address' is given twice" in error.message
