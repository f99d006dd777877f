"""The Prometheus JMX exporter in every broker and controller JVM of the apache engine (pure).

Through the official image's contract: ``KAFKA_OPTS=-javaagent:JAR=PORT:CONFIG`` (Kafka's start script
passes KAFKA_OPTS to the JVM; the image does not read it as a server property).  The exporter's rules
(``stacks/apache/jmx-exporter.yml``) reach the containers as a swarm config.  The jar (2.9 MB) is too
large for a swarm config (at most 1000 KB), so it is image content: ``swarmkit/kafka`` carries it, and
only with that image is the agent named.  With ``apache/kafka`` (or any other image) the stack is the
same except that no agent starts: naming a jar the image lacks would stop the JVM from starting.

The port listens on the overlay only: no service publishes it.  Prometheus (``swarmkit metrics up``)
reaches it there.
"""

from __future__ import annotations

from swarmkit.stack.compose import ConfigFile, stack_script

AGENT_PORT = 9404
AGENT_JAR = "/opt/prometheus/jmx_prometheus_javaagent.jar"  # where swarmkit/kafka's Dockerfile puts it
EXPORTER_RULES = "apache/jmx-exporter.yml"
AGENT_IMAGE = "swarmkit/kafka"  # the repository of the image that carries the jar, on any registry, any tag


def carries_agent(image: str) -> bool:
    """Whether ``image`` is swarmkit's Kafka image (``[REGISTRY/]swarmkit/kafka[:TAG][@DIGEST]``)."""
    path = image.split("@", 1)[0]
    name, _, tag = path.rpartition(":")
    repository = name if name and "/" not in tag else path
    return repository == AGENT_IMAGE or repository.endswith(f"/{AGENT_IMAGE}")


def agent_configs(image: str) -> tuple[ConfigFile, ...]:
    """The exporter's rules, mounted where KAFKA_OPTS names them (nothing for an image without the agent)."""
    return (stack_script(EXPORTER_RULES),) if carries_agent(image) else ()


def agent_env(image: str) -> dict[str, str]:
    """KAFKA_OPTS starting the agent on AGENT_PORT, for an image that carries it."""
    configs = agent_configs(image)
    return {"KAFKA_OPTS": f"-javaagent:{AGENT_JAR}={AGENT_PORT}:{configs[0].target}"} if configs else {}
