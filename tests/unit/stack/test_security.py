"""Security modes (pure): the listener plan, Kafka's settings, certificates, the kept store, the stack."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.ops import reassign
from swarmkit.security import certs, pki
from swarmkit.security.settings import ClientSecurity, read_client_config
from swarmkit.stack.compose import StackRequest, kafka_env
from swarmkit.stack.engines.apache import internal_client_config
from swarmkit.stack.kafka_settings import security_settings
from swarmkit.stack.listener_checks import validate_plan
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.metrics import NODE_SERVICE
from swarmkit.stack.render import check_request, render

CLUSTER_ID = "c3dhcm1raXQtZXhhbXBsZQ"
INVENTORY = Inventory(tuple(Host(f"node{i}", f"unix:///tmp/{i}.sock", f"10.0.0.{i}", "manager") for i in (1, 2, 3)))


def request(security: str, store: pki.Pki | None = None, **given: object) -> StackRequest:
    material = pki.material(store, [(i, [f"node{i}"]) for i in (1, 2, 3)]) if store else None
    plan = ListenerPlan.build(security=security)
    return StackRequest(INVENTORY, listeners=plan, cluster_id=CLUSTER_ID, security=material, **given)  # type: ignore[arg-type]


def test_plaintext_is_the_plan_of_before() -> None:
    assert ListenerPlan.build(security="plaintext") == ListenerPlan()
    assert security_settings(ListenerPlan()) == {}


@pytest.mark.parametrize(
    ("mode", "protocols", "client_auth"),
    [("sasl_ssl", ["SSL", "SASL_SSL", "SSL"], "none"), ("ssl", ["SSL", "SSL", "SSL"], "required")],
)
def test_secure_modes_set_protocols_and_settings(mode: str, protocols: list[str], client_auth: str) -> None:
    plan = validate_plan(ListenerPlan.build(security=mode))
    assert [item.protocol for item in plan.listeners] == protocols
    settings = security_settings(plan, "broker")
    assert settings["ssl.keystore.type"] == "PEM"
    assert settings["ssl.client.auth"] == "required"  # inside the swarm: mutual TLS
    assert settings["listener.name.external.ssl.client.auth"] == client_auth
    assert ("listener.name.external.scram-sha-512.sasl.jaas.config" in settings) == (mode == "sasl_ssl")
    assert "listener.name.external.ssl.client.auth" not in security_settings(plan, "controller")


def test_a_dashed_property_becomes_the_image_variable() -> None:
    assert kafka_env({"listener.name.external.scram-sha-512.sasl.jaas.config": "x"}) == {
        "KAFKA_LISTENER_NAME_EXTERNAL_SCRAM___SHA___512_SASL_JAAS_CONFIG": "x"
    }


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(SpecError, match="security: unknown mode 'tls'"):
        validate_plan(ListenerPlan.build(security="tls"))


def test_a_hostname_command_cannot_be_certified() -> None:
    with pytest.raises(SpecError, match="HOSTNAME_COMMAND"):
        check_request(request("sasl_ssl", advertise="command", hostname_command="hostname"))


def test_tansu_refuses_tls() -> None:
    with pytest.raises(SpecError, match="tansu"):
        check_request(request("sasl_ssl", engine="tansu"))


def test_certificates_name_exactly_the_given_hosts() -> None:
    ca = certs.new_ca("test CA")
    leaf = certs.issue(ca, "broker 1", ["node1", "10.0.0.1"])
    assert sorted(certs.sans_of(leaf.cert_pem)) == ["10.0.0.1", "node1"]
    assert certs.signed_by(leaf.cert_pem, ca.cert_pem)
    assert not certs.signed_by(leaf.cert_pem, certs.new_ca("other").cert_pem)
    assert certs.days_left(leaf.cert_pem) > 800
    assert leaf.keystore.startswith("-----BEGIN PRIVATE KEY-----")
    assert "key_pem" not in repr(leaf)


def test_a_user_ca_must_be_a_ca_with_its_key() -> None:
    ca = certs.new_ca("test CA")
    leaf = certs.issue(ca, "leaf", ["x"])
    with pytest.raises(SpecError, match="not a CA"):
        certs.check_ca(leaf)
    with pytest.raises(SpecError, match="does not belong"):
        certs.check_ca(certs.CertKey(ca.cert_pem, leaf.key_pem))


def test_the_store_keeps_certificates_until_what_they_name_changes(tmp_path: Path) -> None:
    store = pki.Pki(tmp_path / "pki")
    first = store.leaf("broker-1", "b1", ["node1"])
    assert store.leaf("broker-1", "b1", ["node1"]) == first
    moved = store.leaf("broker-1", "b1", ["10.0.0.9"])
    assert moved != first and certs.sans_of(moved.cert_pem) == ("10.0.0.9",)
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((store.directory / "ca.key").stat().st_mode) == 0o600
    assert store.password("alice") == store.password("alice", create=False)
    assert store.users() == ["alice"]
    with pytest.raises(SpecError, match="not valid"):
        store.password("a,b")


def test_a_user_ca_is_used(tmp_path: Path) -> None:
    own = certs.new_ca("our CA")
    directory = tmp_path / "pki"
    directory.mkdir()
    (directory / "ca.crt").write_text(own.cert_pem)
    (directory / "ca.key").write_text(own.key_pem)
    leaf = pki.Pki(directory).leaf("broker-1", "b1", ["node1"])
    assert certs.signed_by(leaf.cert_pem, own.cert_pem)


def test_the_secure_stack_names_secrets_but_holds_none(tmp_path: Path) -> None:
    store = pki.Pki(tmp_path / "pki")
    stack = render(request("sasl_ssl", store))
    password = store.password("swarmkit-admin", create=False)
    assert password and password not in stack.text
    assert "PRIVATE KEY" not in stack.text and "BEGIN CERTIFICATE" not in stack.text
    assert "swarmkit.security: sasl_ssl" in stack.text
    assert {secret.target for secret in stack.secrets} >= {"swarmkit-broker-1.pem", "swarmkit-scram", "swarmkit-ca.crt"}
    assert all(f"./{secret.filename}" in stack.text for secret in stack.secrets)
    assert "uid: '1000'" in stack.text


@pytest.mark.parametrize("mode", ["plaintext", "ssl", "sasl_ssl"])
def test_every_kafka_container_names_its_own_addresses_before_kafka_starts(tmp_path: Path, mode: str) -> None:
    """A SASL login looks up the name of the address the client reached (KAFKA-19919): every broker and
    controller starts as root through local-names.sh, which names them in /etc/hosts and drops to appuser."""
    services = yaml.safe_load(render(request(mode, pki.Pki(tmp_path / "pki"))).text)["services"]
    del services[NODE_SERVICE]  # no Kafka there
    for name, service in services.items():
        assert service["user"] == "root", name
        assert service["entrypoint"][:2] == ["/bin/sh", "/usr/local/lib/swarmkit/local-names.sh"], name
        assert service["entrypoint"][2:4] == ["/bin/sh", "/usr/local/lib/swarmkit/metrics-agent.sh"], name
        assert service["entrypoint"][4:] in (
            ["/bin/sh", "/usr/local/lib/swarmkit/tls-broker.sh"],
            ["/bin/sh", "/usr/local/lib/swarmkit/entrypoint.sh"],
            ["/bin/sh", "/usr/local/lib/swarmkit/controller.sh"],
            ["/etc/kafka/docker/run"],
        ), name
        assert "/usr/local/lib/swarmkit/local-names.sh" in [config["target"] for config in service["configs"]], name


@pytest.mark.parametrize("mode", ["ssl", "sasl_ssl"])
def test_kafka_tools_in_every_container_of_a_secure_stack_get_the_internal_client_config(tmp_path: Path, mode: str) -> None:
    """Reassignment and unregistering run in a broker container, the quorum tool in a controller's."""
    services = yaml.safe_load(render(request(mode, pki.Pki(tmp_path / "pki"))).text)["services"]
    for name, service in services.items():
        if name == NODE_SERVICE:  # no Kafka tool runs there
            continue
        targets = [config["target"] for config in service.get("configs", [])]
        assert internal_client_config().target in targets, name
    connection = reassign.tool_connection(9092, ClientSecurity("SSL", "CA", "/x/ca.crt"))
    assert connection == ["--bootstrap-server", "localhost:9092", "--command-config", internal_client_config().target]


def test_a_plaintext_stack_mounts_no_client_config() -> None:
    services = yaml.safe_load(render(request("plaintext")).text)["services"]
    assert all(internal_client_config().target not in str(service.get("configs", [])) for service in services.values())
    assert reassign.tool_connection(9092, None) == ["--bootstrap-server", "localhost:9092"]


def test_rendering_twice_gives_the_same_secret_names(tmp_path: Path) -> None:
    store = pki.Pki(tmp_path / "pki")
    assert render(request("ssl", store)).text == render(request("ssl", store)).text


def test_client_settings_for_librdkafka_and_java() -> None:
    client = ClientSecurity("SASL_SSL", "CA", "/x/ca.crt", username="u", password="p")
    assert client.librdkafka()["sasl.mechanisms"] == "SCRAM-SHA-512"
    assert client.librdkafka()["ssl.endpoint.identification.algorithm"] == "https"
    java = client.file_settings(java=True)
    assert java["ssl.truststore.location"] == "/x/ca.crt" and 'username="u"' in java["sasl.jaas.config"]
    assert client.file_settings(java=False)["ssl.ca.location"] == "/x/ca.crt"
    assert "password" not in repr(client)


def test_a_client_configuration_is_read_back_in_either_format(tmp_path: Path) -> None:
    client = ClientSecurity("SASL_SSL", "CA PEM", username="u", password="pw")
    for written in client.write_files(tmp_path):
        text = written.read_text()
        written.write_text("bootstrap.servers=a:9094,b:9094\n# a comment\n" + text)
        bootstrap, security = read_client_config(written)
        assert bootstrap == "a:9094,b:9094" and security is not None
        assert (security.protocol, security.ca_pem, security.username, security.password) == ("SASL_SSL", "CA PEM", "u", "pw")
        assert security.verify_hostname


def test_a_mutual_tls_configuration_brings_its_certificate(tmp_path: Path) -> None:
    key_and_cert = (
        "-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n"
    )
    (tmp_path / "me.pem").write_text(key_and_cert)
    (tmp_path / "ca.crt").write_text("CA PEM")
    (tmp_path / "java.properties").write_text(
        "security.protocol=SSL\nssl.truststore.location=ca.crt\nssl.keystore.location=me.pem\n"
        "ssl.endpoint.identification.algorithm=\n"
    )
    _, security = read_client_config(tmp_path / "java.properties")
    assert security is not None and security.client is not None and not security.verify_hostname
    assert security.client.cert_pem.startswith("-----BEGIN CERTIFICATE-----") and "K" in security.client.key_pem


def test_plain_text_and_broken_configurations(tmp_path: Path) -> None:
    (tmp_path / "plain.conf").write_text("bootstrap.servers=a:9094\n")
    assert read_client_config(tmp_path / "plain.conf") == ("a:9094", None)
    (tmp_path / "no-ca.conf").write_text("security.protocol=sasl_ssl\n")
    with pytest.raises(SpecError, match="names no CA file"):
        read_client_config(tmp_path / "no-ca.conf")
    (tmp_path / "gone.conf").write_text("security.protocol=ssl\nssl.ca.location=/nonexistent/ca.crt\n")
    with pytest.raises(SpecError, match="names /nonexistent/ca.crt: no such file"):
        read_client_config(tmp_path / "gone.conf")
    with pytest.raises(SpecError, match="the client configuration .*missing.conf: no such file"):
        read_client_config(tmp_path / "missing.conf")


def test_a_client_configuration_that_cannot_be_used_is_refused_unread(tmp_path: Path) -> None:
    """A fifo or a device is never opened (no hang, no memory blow-up), a binary file or an unknown protocol is named."""
    os.mkfifo(tmp_path / "fifo.conf")
    (tmp_path / "binary.conf").write_bytes(b"\xcb\xff\x00" * 10)
    (tmp_path / "other.conf").write_text("bootstrap.servers=a:9094\nsecurity.protocol=FOO\n")
    (tmp_path / "ca-fifo.conf").write_text("security.protocol=SSL\nssl.ca.location=fifo.conf\n")
    for name, problem in [
        ("fifo.conf", "is not a regular file"),
        ("binary.conf", "is not UTF-8 text"),
        ("other.conf", "security.protocol 'FOO' is not one swarmkit connects with"),
        ("ca-fifo.conf", "fifo.conf: is not a regular file"),
    ]:
        with pytest.raises(SpecError, match=problem):
            read_client_config(tmp_path / name)
    with pytest.raises(SpecError, match="is not a regular file"):
        read_client_config(Path("/dev/zero"))
