#!/bin/sh
# Entrypoint of an Apache Kafka broker (KRaft, broker role) on one swarm node.
# The stack mounts this file and stacks/node-identity.sh as swarm configs in /usr/local/lib/swarmkit/
# (`swarmkit render -o DIR` writes both beside DIR/stack.yml); SWARMKIT_LIB names another copy.
# Inputs (environment), besides those of node-identity.sh:
#   SWARMKIT_ADVERTISED_LISTENERS  advertised.listeners with the placeholders {advertised_host}
#                                  (this node's address for clients) and {internal_host}
#   SWARMKIT_INTERNAL_HOST         this broker's name on the overlay ({{.Task.Name}} in the stack)
#   SWARMKIT_MAX_BROKER_ID         highest broker id; controllers use the ids above it
#   KAFKA_CONTROLLER_QUORUM_VOTERS  id@host:port,...: the JVM starts once a majority of them listen
#   KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS  host:port,... (a dynamic quorum, instead of the voters): the JVM
#                                  starts once the first entry (the controllers' shared name) listens
#   SWARMKIT_QUORUM_WAIT_LOG       seconds between two "still waiting" lines (default 10)
#   KAFKA_START_COMMAND            what to exec once configured (default /etc/kafka/docker/run)
# Outputs: KAFKA_NODE_ID and KAFKA_ADVERTISED_LISTENERS exported to the start command, and KAFKA_BROKER_RACK
# (broker.rack) when this node's identity names a zone: the rack follows the node, as the identity does.
set -eu
. "${SWARMKIT_LIB:-/usr/local/lib/swarmkit/node-identity.sh}"

swarmkit_check_host() {
    case "$2" in
        "" | *[!A-Za-z0-9.:_-]*)
            swarmkit_fail "$1 '$2' is not a host name or address (SWARMKIT_ADVERTISE=${SWARMKIT_ADVERTISE:-hostname})" ;;
        0.0.0.0 | ::)
            swarmkit_fail "$1 '$2' is not routable; clients cannot connect to it" ;;
    esac
}

# A swarm starts every task at once and has no start order.  On a small host six JVMs starting
# together starve the controllers' first election; the brokers then time out registering.  So a
# broker's JVM starts only once a majority of the quorum's voters accept connections (the
# controllers are up), and it waits without a JVM: no CPU taken from them, no cold restarts.
# How this image's netcat tells whether host:port accepts a connection: busybox's runs a program once
# connected (-e), others scan (-z); without either the wait is skipped (the broker then starts at once).
swarmkit_connect_probe() {
    if nc 2>&1 | grep -q -- '-e PROG'; then
        echo exec
    elif nc -h 2>&1 | grep -q -- '-z'; then
        echo scan
    fi
}

swarmkit_listens() { # PROBE HOST PORT
    case "$1" in
        exec) nc -w 2 "$2" "$3" -e /bin/true 2>/dev/null ;;
        scan) nc -z -w 2 "$2" "$3" 2>/dev/null ;;
    esac
}

swarmkit_await_quorum() {
    if [ -n "${KAFKA_CONTROLLER_QUORUM_VOTERS:-}" ]; then
        voters=$(printf '%s' "$KAFKA_CONTROLLER_QUORUM_VOTERS" | tr ',' ' ')
    else # the first entry is the controllers' shared name: one listening there is enough to start
        voters=${KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS:-}
        voters=${voters%%,*}
    fi
    probe=$(command -v nc >/dev/null 2>&1 && swarmkit_connect_probe || true)
    [ -n "$voters" ] && [ -n "$probe" ] || return 0
    set -- $voters
    needed=$(($# / 2 + 1))
    every="${SWARMKIT_QUORUM_WAIT_LOG:-10}"
    started=$(date +%s)
    next_line=0
    while :; do
        listening=0
        for voter in "$@"; do
            address=${voter#*@}
            swarmkit_listens "$probe" "${address%:*}" "${address##*:}" && listening=$((listening + 1))
        done
        [ "$listening" -ge "$needed" ] && break
        waited=$(($(date +%s) - started))
        if [ "$waited" -ge "$next_line" ]; then
            echo "swarmkit: waiting for the controller quorum: $listening of $# voters listen, $needed needed (${waited}s)" >&2
            next_line=$((waited + every))
        fi
        sleep 2
    done
    echo "swarmkit: controller quorum listening ($listening of $# voters) after $(($(date +%s) - started))s" >&2
}

swarmkit_node_identity
identity_file="${SWARMKIT_IDENTITY_FILE:-/swarmkit/identity/node.env}"
[ -n "$BROKER_ID" ] ||
    swarmkit_fail "no BROKER_ID in $identity_file: 'swarmkit deploy' writes it on every node (volume <stack>_identity)"
case "$BROKER_ID" in
    *[!0-9]*) swarmkit_fail "BROKER_ID '$BROKER_ID' in $identity_file is not a whole number" ;;
esac
max_id="${SWARMKIT_MAX_BROKER_ID:-9000}"
[ "$BROKER_ID" -ge 1 ] && [ "$BROKER_ID" -le "$max_id" ] ||
    swarmkit_fail "BROKER_ID $BROKER_ID is outside 1..$max_id (ids above $max_id belong to controllers)"

internal_host="${SWARMKIT_INTERNAL_HOST:-$(hostname)}"
swarmkit_check_host "advertised host" "$ADVERTISED_HOST"
swarmkit_check_host "internal host" "$internal_host"
case "$ADVERTISED_HOST" in
    *:*) advertised="[$ADVERTISED_HOST]" ;;
    *) advertised="$ADVERTISED_HOST" ;;
esac
default_template='INTERNAL://{internal_host}:9092,EXTERNAL://{advertised_host}:9094'
template="${SWARMKIT_ADVERTISED_LISTENERS:-$default_template}"

KAFKA_NODE_ID="$BROKER_ID"
KAFKA_ADVERTISED_LISTENERS=$(printf '%s\n' "$template" |
    sed -e "s|{advertised_host}|$advertised|g" -e "s|{internal_host}|$internal_host|g")
export KAFKA_NODE_ID KAFKA_ADVERTISED_LISTENERS
if [ -n "$NODE_RACK" ]; then
    case "$NODE_RACK" in
        *[!A-Za-z0-9._-]*) swarmkit_fail "NODE_RACK '$NODE_RACK' in $identity_file is not a zone name" ;;
    esac
    KAFKA_BROKER_RACK="$NODE_RACK"
    # consumers that name their zone (client.rack) fetch from a replica there instead of the leader
    KAFKA_REPLICA_SELECTOR_CLASS="${KAFKA_REPLICA_SELECTOR_CLASS:-org.apache.kafka.common.replica.RackAwareReplicaSelector}"
    export KAFKA_BROKER_RACK KAFKA_REPLICA_SELECTOR_CLASS
fi
start="${KAFKA_START_COMMAND:-/etc/kafka/docker/run}"
unset KAFKA_START_COMMAND  # the image turns every KAFKA_* variable into a server property
swarmkit_await_quorum
echo "swarmkit: node.id=$KAFKA_NODE_ID advertised.listeners=$KAFKA_ADVERTISED_LISTENERS broker.rack=${NODE_RACK:-none}" >&2
# shellcheck disable=SC2086  # word splitting lets the start command carry arguments
exec $start
