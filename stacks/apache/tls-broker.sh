#!/bin/sh
# Entrypoint of an Apache Kafka broker in ssl or sasl_ssl mode, in front of stacks/apache/entrypoint.sh
# (all three files mounted as swarm configs in /usr/local/lib/swarmkit/).  Every broker's certificate
# reaches the global service as a swarm secret; this picks the one of this node's broker id for the
# external listener and hands over to the usual entrypoint.
# Inputs (environment), besides those of entrypoint.sh and node-identity.sh:
#   SWARMKIT_BROKER_KEYSTORE  VARIABLE=path, the path naming {broker_id}, e.g.
#     KAFKA_LISTENER_NAME_EXTERNAL_SSL_KEYSTORE_LOCATION=/run/secrets/swarmkit-broker-{broker_id}.pem
set -eu
lib=$(dirname "$0")
. "${SWARMKIT_LIB:-$lib/node-identity.sh}"

swarmkit_node_identity
setting="${SWARMKIT_BROKER_KEYSTORE:?SWARMKIT_BROKER_KEYSTORE names the external listener keystore}"
case "$BROKER_ID" in
    "" | *[!0-9]*) swarmkit_fail "no valid BROKER_ID in the identity file: 'swarmkit deploy' writes it on every node" ;;
esac
keystore=$(printf '%s\n' "${setting#*=}" | sed "s|{broker_id}|$BROKER_ID|g")
[ -r "$keystore" ] ||
    swarmkit_fail "no certificate for broker $BROKER_ID ($keystore): 'swarmkit deploy' issues one for every broker"
export "${setting%%=*}=$keystore"
exec /bin/sh "$lib/entrypoint.sh"
