"""tcp:// engines with TLS get a verifying client; others a plain one (no engine is contacted)."""

from __future__ import annotations

from swarmkit import dockerapi
from swarmkit.inventory import Host, Inventory, TlsFiles


def test_tls_material_reaches_the_client_of_that_endpoint_only() -> None:
    tls = TlsFiles(ca="/certs/ca.pem", cert="/certs/cert.pem", key="/certs/key.pem")
    inventory = Inventory(
        hosts=(
            Host("a", "tcp://a.example:2376", "10.0.0.1", "manager", tls=tls),
            Host("b", "ssh://ops@b.example", "10.0.0.2", "worker"),
        )
    )
    dockerapi.use_inventory(inventory)
    secured = dockerapi.client("tcp://a.example:2376").client_config
    assert (secured.tlsverify, str(secured.tlscacert), str(secured.tlscert), str(secured.tlskey)) == (
        True, "/certs/ca.pem", "/certs/cert.pem", "/certs/key.pem",
    )
    plain = dockerapi.client("ssh://ops@b.example").client_config
    assert not plain.tlsverify and plain.tlscacert is None
