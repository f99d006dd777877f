#!/bin/sh
# Entrypoint of the tansu broker image: one listener, advertised as this node's host.
# EXTERNAL_PORT (default 9094) is both the port tansu binds and the one it advertises;
# STORAGE_ENGINE defaults to memory:// (every broker is then its own single-broker cluster).
set -eu
. /usr/local/lib/swarmkit/node-identity.sh
swarmkit_node_identity
port="${EXTERNAL_PORT:-9094}"
exec /usr/local/bin/tansu broker \
    --listener-url "tcp://0.0.0.0:${port}" \
    --advertised-listener-url "tcp://${ADVERTISED_HOST}:${port}" \
    --storage-engine "${STORAGE_ENGINE:-memory://tansu/}" \
    "$@"
