"""Certificate lifecycle (pure): the CA rotation's steps and trust bundles, the chain brokers present (checked
by OpenSSL for clients trusting the old CA, the new one or both), expiry, and what is refused before a change."""

from __future__ import annotations

import datetime
import socket
import ssl
import threading
from pathlib import Path

import pytest

from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.quorum import QuorumState, Replica
from swarmkit.ops import certs as certs_op
from swarmkit.ops import controllers as controllers_op
from swarmkit.ops import roll
from swarmkit.security import certs, pki, rotation
from swarmkit.security.certs import CertKey
from swarmkit.security.rotation import Rotation
from swarmkit.security.settings import SecretFile
from swarmkit.stack.compose import secret_change

BROKERS = [(1, ["b1.example"]), (2, ["b2.example"])]


def store(tmp_path: Path) -> pki.Pki:
    kept = pki.Pki(tmp_path / "pki")
    pki.material(kept, BROKERS)
    return kept


def cas_of(bundle: str) -> list[str]:
    return [block + "-----END CERTIFICATE-----\n" for block in bundle.split("-----END CERTIFICATE-----\n") if block]


def test_the_steps_still_to_roll_out() -> None:
    assert rotation.remaining(None) == (1, 2, 3)
    assert rotation.remaining(Rotation(1, rolled=False)) == (1, 2, 3)
    assert rotation.remaining(Rotation(2, rolled=True)) == (3,)
    assert rotation.remaining(Rotation(3, rolled=False)) == (3,)
    assert certs_op.steps_for(ca=False, state=None) == (certs_op.RENEW_STEP,)
    with pytest.raises(SpecError, match="a CA rotation is under way \\(step 2 of 3 rolled out\\)") as caught:
        certs_op.steps_for(ca=False, state=Rotation(2, rolled=True))
    assert "certs rotate --ca" in caught.value.hint


def test_a_broken_state_file_is_named() -> None:
    assert rotation.parse_state(rotation.state_text(Rotation(2, True))) == Rotation(2, True)
    assert rotation.parse_state(None) is None
    for text in ("{}", "step 2", '{"step": 7, "rolled": false}'):
        with pytest.raises(SpecError, match="not a CA rotation state"):
            rotation.parse_state(text)


def test_a_bundle_holds_each_certificate_once_in_order() -> None:
    first, second = certs.new_ca("a"), certs.new_ca("b")
    assert certs.bundle(first.cert_pem, second.cert_pem + first.cert_pem, "") == first.cert_pem + second.cert_pem
    assert certs.signed_by(certs.issue(second, "x", ()).cert_pem, first.cert_pem + second.cert_pem)
    assert not certs.signed_by(certs.issue(second, "x", ()).cert_pem, first.cert_pem)


def test_each_step_changes_the_store_as_the_rotation_says(tmp_path: Path) -> None:
    kept = store(tmp_path)
    old = kept.kept_ca()
    assert kept.trust() == old.cert_pem and kept.chain() == ""
    kept.begin_step(1)
    following = kept._pair(rotation.NEXT)
    assert following is not None and kept.trust() == old.cert_pem + following.cert_pem
    client = pki.client_security(kept, "sasl_ssl")  # what client-config writes: the bundle of the moment
    assert client.ca_pem == kept.trust() == Path(client.ca_file).read_text()
    leaf, cross = cas_of(pki.material(kept, BROKERS, renew=True).brokers[0][1].cert_pem)
    assert certs.signed_by(leaf, old.cert_pem) and certs.signed_by(cross, following.cert_pem)  # the old CA, by the new
    kept.step_rolled(1)
    kept.begin_step(2)
    kept.begin_step(2)  # an interrupted step entered again changes nothing
    assert kept.kept_ca() == following and kept.trust() == following.cert_pem + old.cert_pem
    second = pki.material(kept, BROKERS)
    leaf, cross = cas_of(second.brokers[0][1].cert_pem)
    assert certs.signed_by(leaf, following.cert_pem) and certs.signed_by(cross, old.cert_pem)
    kept.step_rolled(2)
    kept.begin_step(3)
    assert kept.trust() == following.cert_pem and (kept.directory / "ca-old.key").is_file()
    assert pki.material(kept, BROKERS).brokers == second.brokers  # step 3 only drops the old CA from the bundle
    kept.step_rolled(3)
    assert kept.rotation() is None and not (kept.directory / "ca-old.key").exists()
    assert not [path.name for path in kept.directory.iterdir() if path.name.startswith(".")]  # each file moved in whole
    assert oct((kept.directory / "ca.key").stat().st_mode & 0o777) == "0o600"


def serve(keystore: CertKey, directory: Path) -> int:
    """A TLS server on localhost presenting ``keystore`` (its certificate and chain) to each connection."""
    directory.mkdir()
    (directory / "chain.pem").write_text(keystore.cert_pem)
    (directory / "key.pem").write_text(keystore.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "chain.pem", directory / "key.pem")
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        while True:
            connection, _ = server.accept()
            try:
                with context.wrap_socket(connection, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                continue

    threading.Thread(target=answer, daemon=True).start()
    return server.getsockname()[1]


def accepted(port: int, trust: str) -> bool:
    context = ssl.create_default_context(cadata=trust)
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="b1.example"),
        ):
            return True
    except ssl.SSLCertVerificationError:
        return False


def test_clients_trusting_either_ca_accept_every_step_s_certificates(tmp_path: Path) -> None:
    """The same CA name and key identifiers: OpenSSL builds leaf → cross-signed new CA → old CA for a client
    that trusts only the old CA (whose path length 0 does not count the self-issued cross-signed one)."""
    kept = store(tmp_path)
    old = kept.kept_ca().cert_pem
    kept.begin_step(1)
    presented = [pki.material(kept, BROKERS, renew=True).brokers[0][1]]
    new = kept._pair(rotation.NEXT).cert_pem  # type: ignore[union-attr]
    for step in (2, 3):
        kept.begin_step(step)
        presented.append(pki.material(kept, BROKERS).brokers[0][1])
    for index, keystore in enumerate(presented):
        port = serve(keystore, tmp_path / f"server-{index}")
        verdicts = [accepted(port, trust) for trust in (old, new, old + new, new + old)]
        assert verdicts == [True] * 4, (keystore.cert_pem.count("BEGIN"), verdicts)
    assert not accepted(serve(presented[-1], tmp_path / "last"), certs.new_ca("another").cert_pem)


def test_expiry_is_the_first_certificate_to_expire(tmp_path: Path) -> None:
    long_lived, short_lived = certs.new_ca("a"), certs.new_ca("b", days=40)
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3650 - 100)
    assert certs.fewest_days([long_lived.cert_pem + short_lived.cert_pem]) == 39
    assert certs.fewest_days([long_lived.cert_pem], now=soon) == 99
    assert certs.fewest_days([]) is None
    assert pki.expiry(pki.Pki(tmp_path / "none")) == pki.Expiry(None, None)
    found = pki.expiry(store(tmp_path))
    assert (found.ca_days, found.broker_days) == (3649, 824)
    assert found.text() == "CA: 3649 days left; broker certificates: 824 days left (the first to expire)"


def test_a_changed_secret_replaces_the_mount_at_its_target() -> None:
    wanted = (SecretFile("swarmkit-ca", "swarmkit-ca.crt", "new"), SecretFile("swarmkit-scram", "swarmkit-scram", "same"))
    scram = SecretFile("swarmkit-scram", "swarmkit-scram", "same")
    mounted = (("kafka_swarmkit-ca-0000aaaa", "swarmkit-ca.crt"), (f"kafka_{scram.name}", "swarmkit-scram"))
    change = secret_change("kafka", mounted, wanted)
    assert change == dockerapi.SecretChange(
        ("kafka_swarmkit-ca-0000aaaa",), (f"source=kafka_{wanted[0].name},target=swarmkit-ca.crt,uid=1000,gid=1000,mode=0400",)
    )
    assert secret_change("kafka", ((f"kafka_{wanted[0].name}", "swarmkit-ca.crt"), *mounted[1:]), wanted) is None


def test_broker_ids_come_from_the_mounted_certificates_and_controllers_must_catch_up() -> None:
    mounted = (
        ("kafka_swarmkit-broker-12-ab", "swarmkit-broker-12.pem"),
        ("x", "swarmkit-ca.crt"),
        ("y", "swarmkit-broker-3.pem"),
    )
    assert certs_op.broker_ids(mounted) == (3, 12)
    state = QuorumState(1001, 50, (Replica(1001, 50, 2000), Replica(1002, 50, 900)), ())
    assert controllers_op.controller_not_ready(state, 1001, 1000) == ""
    assert "has not caught up" in controllers_op.controller_not_ready(state, 1002, 1000)
    assert controllers_op.controller_not_ready(state, 1002, 800) == ""
    assert "not among the quorum's voters" in controllers_op.controller_not_ready(state, 1003, 0)
    assert controllers_op.controller_not_ready(QuorumState(-1, 0, (), ()), 1001, 0) == "no controller leads the quorum"


def test_a_step_whose_cluster_does_not_get_back_in_sync_says_where_a_new_run_resumes() -> None:
    error = certs_op.not_settled(2, 300, "1 partition(s) not fully in sync: new-0")
    assert error.message == (
        "step 2 of the CA rotation is rolled out, but the cluster is not back in sync after 300 s:"
        " 1 partition(s) not fully in sync: new-0"
    )
    assert "swarmkit status" in error.hint and error.hint.endswith("run certs rotate --ca again: it resumes at step 3")
    assert certs_op.not_settled(3, 300, "x").hint.endswith("the rotation itself is complete")
    assert certs_op.not_settled(certs_op.RENEW_STEP, 60, "x").message.startswith("every new certificate is rolled out")


def fake_cluster(monkeypatch: pytest.MonkeyPatch, security_label: str) -> Session:
    inventory = Inventory((Host("k1", "unix:///k1.sock", "10.0.0.1", "manager"),), path="/nonexistent/inv.yaml")
    labels = {"swarmkit.engine": "apache", **({"swarmkit.security": security_label} if security_label else {})}
    state = dockerapi.ServiceState("kafka_broker", "", "", {}, (), labels=labels)
    monkeypatch.setattr(certs_op, "engine_states", lambda inventory, docker: {})
    monkeypatch.setattr(certs_op, "active_manager", lambda inventory, engines: inventory.hosts[0])
    monkeypatch.setattr(roll, "replicated_brokers", lambda manager, stack: state)
    return Session(inventory, NoEngines())  # type: ignore[arg-type]


class NoEngines:
    """Stands in for the engines: every call that reaches one is monkeypatched."""

    def __getitem__(self, host: Host) -> None:
        return None


def test_a_stack_without_tls_or_without_its_ca_is_refused_before_anything_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with pytest.raises(SpecError, match="runs without TLS") as caught:
        certs_op.rotate(fake_cluster(monkeypatch, ""), certs_op.RotateOptions(ca=True))
    assert "--security sasl_ssl" in caught.value.hint
    session = fake_cluster(monkeypatch, "sasl_ssl")
    monkeypatch.setattr(pki, "store_dir", lambda inventory, stack: tmp_path / "pki")
    with pytest.raises(SpecError, match="no cluster CA"):
        certs_op.rotate(session, certs_op.RotateOptions(ca=True))
    assert not (tmp_path / "pki").exists()
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text(certs.new_ca("a").cert_pem)
    (tmp_path / "pki" / "ca.key").write_text(certs.new_ca("b").key_pem)
    with pytest.raises(SpecError, match="ca.key: does not belong to ca.crt"):
        certs_op.rotate(session, certs_op.RotateOptions(ca=True))
    assert sorted(path.name for path in (tmp_path / "pki").iterdir()) == ["ca.crt", "ca.key"]
