"""The Spark job's login to a secure cluster: what swarmkit writes is what the job reads, privately."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from swarmkit.assets import SPARK_DIR
from swarmkit.security.certs import CertKey
from swarmkit.security.settings import ClientSecurity

sys.path.insert(0, str(SPARK_DIR))
import verify_job as job  # noqa: E402  (the job file is a script, not a package module)


def test_a_sasl_ssl_login_reaches_the_driver_and_the_connector(tmp_path: Path) -> None:
    security = ClientSecurity("SASL_SSL", "CA PEM", username="u", password="secret")
    conf, properties = security.write_files(tmp_path)
    client = job.Client.from_files(conf, properties)
    assert client.driver["security.protocol"] == "sasl_ssl" and client.driver["sasl.password"] == "secret"
    assert client.driver["ssl.ca.location"] == str(tmp_path / "ca.crt")
    options = client.connector_options()
    assert options["kafka.security.protocol"] == "SASL_SSL" and options["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert 'password="secret"' in options["kafka.sasl.jaas.config"]
    assert options["kafka.ssl.truststore.location"] == str(tmp_path / "ca.crt")
    assert (tmp_path / "ca.crt").read_text() == "CA PEM"
    for path in (conf, properties):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_mutual_tls_login_gets_its_keystore(tmp_path: Path) -> None:
    security = ClientSecurity("SSL", "CA PEM", client=CertKey("CERT\n", "KEY\n"))
    conf, properties = security.write_files(tmp_path)
    keystore = tmp_path / "client.pem"
    assert keystore.read_text() == "KEY\nCERT\n" and stat.S_IMODE(keystore.stat().st_mode) == 0o600
    client = job.Client.from_files(conf, properties)
    assert client.driver["ssl.certificate.location"] == str(keystore)
    assert client.connector_options()["kafka.ssl.keystore.location"] == str(keystore)


def test_plain_text_has_no_login() -> None:
    assert job.Client.from_files(None, None).connector_options() == {}
