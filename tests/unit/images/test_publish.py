"""Sandbox images are tagged by their build context's digest, so a shared registry serves them again."""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.errors import SpecError
from swarmkit.images import image, maven, shipping
from swarmkit.images.image import context_digest, registry_holds


def context(root: Path, script: str = "echo hi") -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "Dockerfile").write_text("FROM scratch\n")
    (root / "bin" / "run").write_text(script)
    return root


def test_the_digest_follows_content_and_mode_and_nothing_else(tmp_path: Path) -> None:
    first = context_digest(context(tmp_path / "a"))
    assert context_digest(context(tmp_path / "b")) == first  # where the context sits does not count
    assert context_digest(context(tmp_path / "c", "echo other")) != first
    executable = context(tmp_path / "d")
    (executable / "bin" / "run").chmod(0o755)
    assert context_digest(executable) != first


class Manifests(http.server.BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        held = self.path == "/v2/swarmkit/kafka/manifests/4.1.0-abc"
        self.send_response(200 if held and "manifest.v2" in self.headers["Accept"] else 404)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Manifests)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_only_a_manifest_the_registry_holds_skips_the_build(registry: str) -> None:
    assert registry_holds(f"{registry}/swarmkit/kafka:4.1.0-abc")
    assert not registry_holds(f"{registry}/swarmkit/kafka:4.1.0-def")
    assert not registry_holds("127.0.0.1:1/swarmkit/kafka:4.1.0-abc")  # nobody listening: build and push


def test_swarmkit_builds_an_image_for_each_kafka_version_and_refuses_another() -> None:
    assert shipping.is_own("swarmkit/kafka:4.3.1") and shipping.is_own("swarmkit/kafka:4.4.0")
    with pytest.raises(SpecError, match="Kafka 4.2.0: swarmkit builds no image"):
        image.kafka_recipe("4.2.0")


def test_the_maven_stamp_changes_with_the_kafka_version(tmp_path, monkeypatch) -> None:
    """Each version's jars are their own cache entry: the properties given to Maven are part of the stamp."""
    calls = []
    monkeypatch.setattr(maven, "tool", lambda name, package: "mvn")

    def fake_run(command, **kwargs):
        calls.append(command)
        (Path(next(a for a in command if a.startswith("-DoutputDirectory=")).split("=", 1)[1]) / "a.jar").write_text("")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    for version in ("4.3.1", "4.3.1", "4.4.0"):
        maven.resolved(pom, tmp_path / "libs", (("kafka.version", version),))
    assert [next(a for a in c if a.startswith("-Dkafka.version")) for c in calls] == [
        "-Dkafka.version=4.3.1",
        "-Dkafka.version=4.4.0",
    ]
