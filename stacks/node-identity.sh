# Sourced by every engine's entrypoint: works out who this broker is on this node.
# Inputs (environment):
#   SWARMKIT_ADVERTISE      hostname | inventory-address | command   (default: hostname)
#   SWARMKIT_NODE_HOSTNAME  the swarm node's hostname ({{.Node.Hostname}} in the stack)
#   HOSTNAME_COMMAND        with "command": a shell command whose output is the host to advertise
#   SWARMKIT_IDENTITY_FILE  per-node file written by `swarmkit deploy` (BROKER_ID=, NODE_ADDRESS=, NODE_RACK=)
# Outputs (shell variables): ADVERTISED_HOST, BROKER_ID (empty when no identity file), NODE_RACK (the
# host's zone from the inventory, empty when it has none).

swarmkit_fail() {
    echo "swarmkit: $*" >&2
    exit 64
}

swarmkit_node_identity() {
    identity_file="${SWARMKIT_IDENTITY_FILE:-/swarmkit/identity/node.env}"
    BROKER_ID=""
    NODE_ADDRESS=""
    NODE_RACK=""
    if [ -r "$identity_file" ]; then
        BROKER_ID=$(sed -n 's/^BROKER_ID=//p' "$identity_file")
        NODE_ADDRESS=$(sed -n 's/^NODE_ADDRESS=//p' "$identity_file")
        NODE_RACK=$(sed -n 's/^NODE_RACK=//p' "$identity_file")
    fi
    case "${SWARMKIT_ADVERTISE:-hostname}" in
        hostname)
            ADVERTISED_HOST="${SWARMKIT_NODE_HOSTNAME:-$(hostname)}"
            ;;
        inventory-address)
            [ -n "$NODE_ADDRESS" ] || swarmkit_fail "no NODE_ADDRESS in $identity_file; run 'swarmkit deploy' to write this node's identity"
            ADVERTISED_HOST="$NODE_ADDRESS"
            ;;
        command)
            [ -n "${HOSTNAME_COMMAND:-}" ] || swarmkit_fail "SWARMKIT_ADVERTISE=command needs HOSTNAME_COMMAND"
            ADVERTISED_HOST=$(sh -c "$HOSTNAME_COMMAND" | head -n 1 | tr -d '[:space:]')
            [ -n "$ADVERTISED_HOST" ] || swarmkit_fail "HOSTNAME_COMMAND printed nothing: $HOSTNAME_COMMAND"
            ;;
        *)
            swarmkit_fail "unknown SWARMKIT_ADVERTISE '${SWARMKIT_ADVERTISE}' (hostname, inventory-address or command)"
            ;;
    esac
    echo "swarmkit: advertising ${ADVERTISED_HOST} broker id ${BROKER_ID:-none}" >&2
}
