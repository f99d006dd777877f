#!/bin/sh
# Entrypoint of an Apache Kafka KRaft controller in sasl_ssl mode (mounted as a swarm config, as
# stacks/apache/entrypoint.sh is for brokers).  Before the image's start script runs, an unformatted
# data directory is formatted with the admin's SCRAM credential (`kafka-storage format --add-scram`),
# so the credential is in the cluster's first metadata and swarmkit can authenticate from the start.
# The image's start script then finds the directory formatted and keeps it.
# Inputs (environment):
#   SWARMKIT_SCRAM_FILE   a swarm secret holding SCRAM-SHA-512=[name=...,password=...]
#   CLUSTER_ID, KAFKA_NODE_ID, KAFKA_LOG_DIRS, KAFKA_LISTENERS, KAFKA_CONTROLLER_LISTENER_NAMES,
#   KAFKA_CONTROLLER_QUORUM_VOTERS, KAFKA_LISTENER_SECURITY_PROTOCOL_MAP   as for the image
#   KAFKA_START_COMMAND   what to exec afterwards (default /etc/kafka/docker/run)
set -eu

controller_fail() {
    echo "swarmkit: $*" >&2
    exit 64
}

scram_file="${SWARMKIT_SCRAM_FILE:?SWARMKIT_SCRAM_FILE names the SCRAM credential secret}"
data_dir="${KAFKA_LOG_DIRS:?KAFKA_LOG_DIRS is the controller data volume}"
[ -r "$scram_file" ] || controller_fail "cannot read $scram_file: deploy with 'swarmkit deploy --security sasl_ssl'"
if [ ! -e "$data_dir/meta.properties" ]; then
    config=$(mktemp)
    {
        echo "process.roles=controller"
        echo "node.id=$KAFKA_NODE_ID"
        echo "log.dirs=$data_dir"
        echo "listeners=$KAFKA_LISTENERS"
        echo "listener.security.protocol.map=$KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"
        echo "controller.listener.names=$KAFKA_CONTROLLER_LISTENER_NAMES"
        echo "controller.quorum.voters=$KAFKA_CONTROLLER_QUORUM_VOTERS"
    } >"$config"
    echo "swarmkit: formatting $data_dir for cluster $CLUSTER_ID with the admin's SCRAM credential" >&2
    /opt/kafka/bin/kafka-storage.sh format --cluster-id "$CLUSTER_ID" --config "$config" \
        --add-scram "$(cat "$scram_file")" >&2
    rm -f "$config"
fi
start="${KAFKA_START_COMMAND:-/etc/kafka/docker/run}"
unset KAFKA_START_COMMAND
# shellcheck disable=SC2086  # word splitting lets the start command carry arguments
exec $start
