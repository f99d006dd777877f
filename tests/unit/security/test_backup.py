"""A sealed state: round trip, and every way a file can be wrong refused before anything is written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swarmkit.errors import SpecError
from swarmkit.ops.state import Deployed, mismatch
from swarmkit.security import backup, certs

PASSPHRASE = "correct horse battery staple"
CHEAP = (14, 8, 1)  # the lowest cost a file may ask for: tests stay fast
CA = certs.new_ca("swarmkit cluster CA (test)")
LEAF = certs.issue(CA, "swarmkit broker 1", ("node1",))
STATE = backup.State(
    "kafka",
    "AAAAAAAAAAAAAAAAAAAAAw",
    {"ca.crt": CA.cert_pem, "ca.key": CA.key_pem, "broker-1.crt": LEAF.cert_pem, "user-alice.password": "secret"},
    "2026-11-27T05:00:00+00:00",
)
SEALED = backup.seal(STATE, PASSPHRASE, CHEAP)


def opened(data: bytes, passphrase: str = PASSPHRASE) -> backup.State:
    return backup.unseal(backup.read_sealed(data, "f"), passphrase, "f")


def test_a_sealed_state_opens_with_its_passphrase_and_hides_its_content() -> None:
    assert opened(SEALED) == STATE
    assert b"secret" not in SEALED and b"PRIVATE KEY" not in SEALED
    assert backup.seal(STATE, PASSPHRASE, CHEAP) != SEALED  # a fresh salt and nonce each time
    assert STATE.users() == ["alice"]


def test_a_wrong_passphrase_is_named_as_such() -> None:
    with pytest.raises(SpecError, match="wrong passphrase") as caught:
        opened(SEALED, "not the passphrase at all")
    assert caught.value.exit_code == 2


def test_a_short_passphrase_is_refused_at_export() -> None:
    with pytest.raises(SpecError, match="fewer than 12"):
        backup.seal(STATE, "short", CHEAP)


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=len(SEALED) - 1))
def test_a_truncated_file_is_refused(length: int) -> None:
    with pytest.raises(SpecError, match="truncated|not a swarmkit state file"):
        opened(SEALED[:length])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=backup.HEADER.size, max_value=len(SEALED) - 1), st.integers(min_value=1, max_value=255))
def test_a_changed_byte_in_the_content_is_found(position: int, flip: int) -> None:
    damaged = bytearray(SEALED)
    damaged[position] ^= flip
    with pytest.raises(SpecError, match="damaged or truncated"):
        opened(bytes(damaged))


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=200))
def test_other_bytes_are_never_a_state(data: bytes) -> None:
    with pytest.raises(SpecError):
        opened(data)


def test_a_header_asking_for_a_huge_cost_is_refused_before_any_work() -> None:
    damaged = bytearray(SEALED)
    damaged[len(backup.MAGIC) + 1] = 40  # log2(n)
    with pytest.raises(SpecError, match="damaged header"):
        opened(bytes(damaged))


def test_a_newer_format_is_named() -> None:
    damaged = bytearray(SEALED)
    damaged[len(backup.MAGIC)] = 9
    with pytest.raises(SpecError, match="format 9"):
        opened(bytes(damaged))


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"ca.crt": CA.cert_pem}, "no cluster CA"),
        ({"ca.crt": CA.cert_pem, "ca.key": certs.new_ca("other").key_pem}, "does not belong"),
        ({"ca.crt": CA.cert_pem, "ca.key": CA.key_pem, "../escape": "x"}, "never keeps"),
    ],
)
def test_a_sealed_payload_that_is_not_a_store_is_refused(files: dict[str, str], message: str) -> None:
    sealed = backup.seal(backup.State("kafka", None, files), PASSPHRASE, CHEAP)
    with pytest.raises(SpecError, match=message):
        opened(sealed)


def test_install_replaces_the_store_whole_and_privately(tmp_path: Path) -> None:
    store = tmp_path / ".swarmkit" / "inventory.kafka.pki"
    store.mkdir(parents=True)
    (store / "user-bob.password").write_text("old")
    backup.install(store, STATE.files)
    assert backup.read_store(store) == STATE.files
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in store.iterdir()} == {0o600}
    assert sorted(p.name for p in store.parent.iterdir()) == ["inventory.kafka.pki"]


def test_read_store_leaves_out_what_is_made_again_and_staged_files(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("a")
    (tmp_path / "trust.crt").write_text("b")
    (tmp_path / ".ca.key.new").write_text("c")
    assert backup.read_store(tmp_path) == {"ca.crt": "a"}
    assert backup.read_store(tmp_path / "absent") == {}


def test_changed_names_only_what_an_import_would_lose() -> None:
    assert backup.changed({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "x", "d": "4"}) == ["b", "c"]


def test_write_sealed_is_private(tmp_path: Path) -> None:
    target = tmp_path / "state.skstate"
    backup.write_sealed(target, SEALED)
    assert target.read_bytes() == SEALED and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["state.skstate"]


def test_the_state_of_another_cluster_is_told_apart() -> None:
    presented = LEAF.cert_pem
    assert mismatch(STATE, Deployed("sasl_ssl", "AAAAAAAAAAAAAAAAAAAAAw", presented)) is None
    assert mismatch(STATE, Deployed("sasl_ssl", None, presented)) is None
    other_id = mismatch(STATE, Deployed("sasl_ssl", "BBBBBBBBBBBBBBBBBBBBBw", presented))
    assert other_id is not None and "cluster BBBBBBBBBBBBBBBBBBBBBw" in other_id
    other_ca = certs.issue(certs.new_ca("another"), "swarmkit broker 1", ("node1",)).cert_pem
    assert "another cluster's state" in (mismatch(STATE, Deployed("sasl_ssl", None, other_ca)) or "")
    assert "plaintext" in (mismatch(STATE, Deployed("plaintext", None, None)) or "")
