"""The Prometheus JMX exporter in every broker and controller JVM of the apache engine (pure).

Nothing of it is image content of the Kafka image, so any image that keeps the official contract exports
metrics.  The jar (2.9 MB, too large for a swarm config's 1000 KB) reaches each node in the per-node volume
``<stack>_metrics-agent``, which ``swarmkit deploy`` fills from swarmkit's probe image (shipped to every
node for preflight anyway, ``stacks/probe/Dockerfile``) before the stack starts, and which brokers and
controllers mount read-only.  The exporter's rules (``stacks/apache/jmx-exporter.yml``) are a swarm config.

The JVM is told through the official image's contract, ``KAFKA_OPTS=-javaagent:JAR=PORT:RULES``, but only
the server's: ``stacks/apache/metrics-agent.sh`` (the services' entrypoint) adds it to KAFKA_OPTS of the
process it starts, when the jar is there (a node the volume was not filled on starts without metrics rather
than not at all).  The containers' own environment never names the agent, so a Kafka tool run in them with
``docker exec`` (as `status`, `roll` and `remove-node` do; the official image's tools read KAFKA_OPTS) does
not start a second agent on the taken port.

Beside every broker runs Debian's node exporter (the service ``node-exporter``, global, from the same probe
image), with the broker's data volume mounted read-only: the free space of the file system under each broker's
log directory, which the rule KafkaDiskFilling reads.  Its container is named after its node (``nodename``).
Being part of the Kafka stack, it shares the broker's volume as the stack's own, so no other stack creates it.

The ports listen on the overlay only: no service publishes them.  Prometheus (``swarmkit metrics up``)
reaches them there.
"""

from __future__ import annotations

from typing import Any

from swarmkit.stack.compose import ConfigFile, StackRequest, stack_script, volume

AGENT_PORT = 9404
AGENT_VOLUME = "metrics-agent"  # the stack deploys it as <stack>_metrics-agent, one per node
AGENT_DIR = "/opt/swarmkit/metrics"  # where the volume is mounted in brokers and controllers
AGENT_FILE = "jmx_prometheus_javaagent.jar"
PROBE_AGENT = f"{AGENT_DIR}/{AGENT_FILE}"  # where swarmkit's probe image carries it (stacks/probe/Dockerfile)
EXPORTER_RULES = "apache/jmx-exporter.yml"
AGENT_SCRIPT = "apache/metrics-agent.sh"  # the entrypoint: the agent into the server's KAFKA_OPTS, then the rest
AGENT_ENV = "SWARMKIT_METRICS_AGENT"
PROBE_IMAGE = "swarmkit/probe:2"  # swarmkit.images.image.PROBE_TAG (a unit test keeps them equal)
NODE_SERVICE = "node-exporter"
NODE_PORT = 9100
NODE_DATA_DIR = "/kafka/data"  # where the node exporter mounts the broker's data volume
NOBODY = "65534"


def agent_configs() -> tuple[ConfigFile, ...]:
    """The exporter's rules, where the agent option names them, and the entrypoint that adds the option."""
    return (stack_script(EXPORTER_RULES), stack_script(AGENT_SCRIPT))


def agent_env() -> dict[str, str]:
    """The agent's option, for metrics-agent.sh to add to the server's KAFKA_OPTS."""
    return {AGENT_ENV: f"-javaagent:{AGENT_DIR}/{AGENT_FILE}={AGENT_PORT}:{stack_script(EXPORTER_RULES).target}"}


def agent_mount() -> dict[str, object]:
    return volume(AGENT_VOLUME, AGENT_DIR, read_only=True)


def agent_entrypoint(then: list[str]) -> list[str]:
    """The service's entrypoint: metrics-agent.sh, which execs ``then`` with the agent in its KAFKA_OPTS."""
    return ["/bin/sh", stack_script(AGENT_SCRIPT).target, *then]


def agent_volume(stack: str) -> str:
    return f"{stack}_{AGENT_VOLUME}"


def node_exporter(request: StackRequest, data_volume: str) -> dict[str, Any]:
    """The node exporter beside the broker on every node: only the file systems and the node's name are collected,
    the broker's volume ``data_volume`` mounted read-only."""
    return {
        "image": request.inventory.stack.probe_image or PROBE_IMAGE,
        "entrypoint": ["/usr/bin/node-exporter"],
        "command": [
            "--collector.disable-defaults",
            "--collector.filesystem",
            "--collector.uname",
            f"--web.listen-address=:{NODE_PORT}",
        ],
        "hostname": "{{.Node.Hostname}}",
        "user": NOBODY,
        "volumes": [volume(data_volume, NODE_DATA_DIR, read_only=True)],
        "networks": [request.network],
        "deploy": {"mode": "global", "endpoint_mode": "dnsrr", "restart_policy": {"condition": "any", "delay": "5s"}},
    }
