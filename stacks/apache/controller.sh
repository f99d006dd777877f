#!/bin/sh
# Entrypoint of an Apache Kafka KRaft controller (mounted as a swarm config, as stacks/apache/entrypoint.sh
# is for brokers) where the image's own start script cannot format its storage: a dynamic quorum (KIP-853),
# whose controllers are formatted with --initial-controllers or join later as observers, and sasl_ssl, whose
# first metadata holds the admin's SCRAM credential.  An unformatted data directory is formatted here; the
# image's start script then finds it formatted and keeps it.
# Inputs (environment):
#   SWARMKIT_INITIAL_CONTROLLERS  id@host:port:directory-id,... of the controllers the cluster was created
#                                 with (dynamic quorum); a controller not in it formats without voters and
#                                 waits as an observer until `swarmkit replace-node` adds it
#   SWARMKIT_SCRAM_FILE           a swarm secret holding SCRAM-SHA-512=[name=...,password=...] (sasl_ssl)
#   CLUSTER_ID, KAFKA_NODE_ID, KAFKA_LOG_DIRS, KAFKA_LISTENERS, KAFKA_CONTROLLER_LISTENER_NAMES,
#   KAFKA_CONTROLLER_QUORUM_VOTERS or KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS,
#   KAFKA_LISTENER_SECURITY_PROTOCOL_MAP   as for the image
#   KAFKA_START_COMMAND   what to exec afterwards (default /etc/kafka/docker/run)
set -eu

controller_fail() {
    echo "swarmkit: $*" >&2
    exit 64
}

# The quorum setting and the format option that goes with it.
controller_quorum() {
    if [ -n "${KAFKA_CONTROLLER_QUORUM_VOTERS:-}" ]; then
        echo "controller.quorum.voters=$KAFKA_CONTROLLER_QUORUM_VOTERS" >>"$1"
        return
    fi
    echo "controller.quorum.bootstrap.servers=${KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS:?neither voters nor bootstrap servers}" >>"$1"
    case ",${SWARMKIT_INITIAL_CONTROLLERS:-}" in
        *",$KAFKA_NODE_ID@"*) set -- --initial-controllers "$SWARMKIT_INITIAL_CONTROLLERS" ;;
        *) set -- --no-initial-controllers ;;
    esac
    printf '%s\n' "$@"
}

data_dir="${KAFKA_LOG_DIRS:?KAFKA_LOG_DIRS is the controller data volume}"
if [ ! -e "$data_dir/meta.properties" ]; then
    config=$(mktemp)
    {
        echo "process.roles=controller"
        echo "node.id=$KAFKA_NODE_ID"
        echo "log.dirs=$data_dir"
        echo "listeners=$KAFKA_LISTENERS"
        echo "listener.security.protocol.map=$KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"
        echo "controller.listener.names=$KAFKA_CONTROLLER_LISTENER_NAMES"
    } >"$config"
    options=$(controller_quorum "$config")
    set -- --cluster-id "$CLUSTER_ID" --config "$config"
    [ -z "$options" ] || set -- "$@" $options
    if [ -n "${SWARMKIT_SCRAM_FILE:-}" ]; then
        [ -r "$SWARMKIT_SCRAM_FILE" ] ||
            controller_fail "cannot read $SWARMKIT_SCRAM_FILE: deploy with 'swarmkit deploy --security sasl_ssl'"
        set -- "$@" --add-scram "$(cat "$SWARMKIT_SCRAM_FILE")"
    fi
    # shellcheck disable=SC2086  # one line for the log
    echo "swarmkit: formatting $data_dir for cluster $CLUSTER_ID:" ${options:-static voters} >&2
    /opt/kafka/bin/kafka-storage.sh format "$@" >&2
    rm -f "$config"
fi
start="${KAFKA_START_COMMAND:-/etc/kafka/docker/run}"
unset KAFKA_START_COMMAND
# shellcheck disable=SC2086  # word splitting lets the start command carry arguments
exec $start
