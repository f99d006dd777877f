#!/bin/sh
# Entrypoint of every broker and controller of the apache engine (mounted as a swarm config): adds the
# Prometheus JMX exporter to KAFKA_OPTS of the process it starts, then execs the rest of its arguments
# (the broker's entrypoint script, the controller's, or the image's /etc/kafka/docker/run).
# Inputs (environment):
#   SWARMKIT_METRICS_AGENT  -javaagent:JAR=PORT:RULES; JAR is in the node's volume <stack>_metrics-agent,
#                           which `swarmkit deploy` fills (swarmkit/stack/metrics.py)
#   KAFKA_OPTS              kept; the agent's option is added after it
# Only this process tree sees the option: the container's environment does not name the agent, so a Kafka
# tool started in the container with `docker exec` starts no second agent on the same port.  Without the
# jar (a node whose volume was not filled) Kafka starts without metrics rather than not at all.
set -eu
[ $# -ge 1 ] || {
    echo "usage: metrics-agent.sh COMMAND [ARGS...]" >&2
    exit 64
}
agent="${SWARMKIT_METRICS_AGENT:-}"
unset SWARMKIT_METRICS_AGENT
if [ -n "$agent" ]; then
    jar="${agent#-javaagent:}"
    jar="${jar%%=*}"
    if [ -r "$jar" ]; then
        KAFKA_OPTS="${KAFKA_OPTS:+$KAFKA_OPTS }$agent"
        export KAFKA_OPTS
    else
        echo "swarmkit: no metrics agent at $jar (volume <stack>_metrics-agent not filled on this node): starting without metrics" >&2
    fi
fi
exec "$@"
