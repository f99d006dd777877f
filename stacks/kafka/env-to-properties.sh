# Sourced by /etc/kafka/docker/run: the official apache/kafka image's environment contract
# (KIP-975) in POSIX sh, so busybox runs it and tests run it without Java.
#   Every KAFKA_* variable is a server property: drop KAFKA_, lower-case, then ___ -> -,
#   __ -> _, _ -> . (KAFKA_LISTENER_SECURITY_PROTOCOL_MAP -> listener.security.protocol.map),
#   except the JVM and logging settings in kafka_not_properties.
#   CLUSTER_ID is required with KAFKA_PROCESS_ROLES; a controller-only node may not advertise
#   listeners; KAFKA_LISTENERS defaults to the advertised listeners with the hosts emptied
#   (bind on every interface); log.dirs defaults to /tmp/kraft-combined-logs as in the official
#   image (lost with the container: set KAFKA_LOG_DIRS to a volume).
#   With no KAFKA_* property at all, the official image's single-node defaults apply.
# Values are written as given (=, :, commas, braces, spaces kept; a backslash is escaped so Java
# reads it back unchanged); a value with a line break is refused, it would split the property.

# Shell variables here are lower-case: an exported KAFKA_* name would itself become a property.
kafka_not_properties=" KAFKA_VERSION KAFKA_HEAP_OPTS KAFKA_LOG4J_OPTS KAFKA_OPTS KAFKA_JMX_OPTS \
KAFKA_JVM_PERFORMANCE_OPTS KAFKA_GC_LOG_OPTS KAFKA_LOG4J_ROOT_LOGLEVEL KAFKA_LOG4J_LOGGERS \
KAFKA_TOOLS_LOG4J_LOGLEVEL KAFKA_JMX_HOSTNAME "
kafka_default_log_dirs=/tmp/kraft-combined-logs

kafka_fail() {
    echo "kafka: $*" >&2
    exit 64
}

# The names of the KAFKA_* variables in the environment, sorted (env may list them in any order).
kafka_env_names() {
    env | sed -n 's/^\(KAFKA_[A-Za-z0-9_]*\)=.*/\1/p' | sort -u | while read -r name; do
        if eval "[ \"\${$name+set}\" = set ]"; then printf '%s\n' "$name"; fi
    done
}

# The property a variable stands for; nothing for the variables that are not properties.
kafka_property_name() {
    case "$kafka_not_properties" in *" $1 "*) return 0 ;; esac
    [ "$1" != KAFKA_ ] || return 0
    printf '%s\n' "${1#KAFKA_}" | tr '[:upper:]' '[:lower:]' |
        sed -e 's/___/-/g' -e 's/__/\//g' -e 's/_/./g' -e 's/\//_/g'
}

# Whether any server setting is given (KAFKA_JMX_PORT, a JVM setting that the contract also maps
# to a property, does not count).
kafka_has_properties() {
    for name in $(kafka_env_names); do
        [ "$name" = KAFKA_JMX_PORT ] || [ -z "$(kafka_property_name "$name")" ] || return 0
    done
    return 1
}

# A line break would end the property early and start another: refuse before writing anything.
kafka_check_values() {
    for name in $(kafka_env_names); do
        [ -n "$(kafka_property_name "$name")" ] || continue
        eval "value=\${$name}"
        case "$value" in *'
'*) kafka_fail "$name contains a line break; a property value is one line" ;;
        esac
    done
}

# `docker run swarmkit/kafka` with no configuration: the official image's single-node broker.
kafka_apply_defaults() {
    echo "kafka: no KAFKA_* settings, using the single-node defaults of the official image" >&2
    export CLUSTER_ID="${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}"
    export KAFKA_NODE_ID=1 KAFKA_PROCESS_ROLES=broker,controller
    export KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT
    export KAFKA_LISTENERS=PLAINTEXT://localhost:29092,CONTROLLER://localhost:29093,PLAINTEXT_HOST://0.0.0.0:9092
    export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:29092,PLAINTEXT_HOST://localhost:9092
    export KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:29093 KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER
    export KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0
    export KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1 KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1
    export KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1
}

# listeners from advertised.listeners: every host emptied, ports kept (NAME://host:port -> NAME://:port).
kafka_listeners_from() {
    printf '%s\n' "$1" | sed -e 's#://[^,]*:\([0-9][0-9]*\)#://:\1#g'
}

# Checks and derived settings; call before kafka_properties.
kafka_prepare() {
    kafka_check_values
    kafka_has_properties || kafka_apply_defaults
    if [ -n "${KAFKA_PROCESS_ROLES:-}" ]; then
        [ -n "${CLUSTER_ID:-}" ] ||
            kafka_fail "CLUSTER_ID is not set: a KRaft node (KAFKA_PROCESS_ROLES=$KAFKA_PROCESS_ROLES) formats its storage with it; make one with 'kafka-storage.sh random-uuid' and give every node the same"
        if [ "$KAFKA_PROCESS_ROLES" = controller ]; then
            [ -z "${KAFKA_ADVERTISED_LISTENERS:-}" ] ||
                kafka_fail "KAFKA_ADVERTISED_LISTENERS is not supported on a KRaft controller (KAFKA_PROCESS_ROLES=controller); set KAFKA_LISTENERS"
            unset KAFKA_ADVERTISED_LISTENERS
        fi
    fi
    if [ -z "${KAFKA_LISTENERS:-}" ] && [ -n "${KAFKA_ADVERTISED_LISTENERS:-}" ]; then
        KAFKA_LISTENERS=$(kafka_listeners_from "$KAFKA_ADVERTISED_LISTENERS")
        export KAFKA_LISTENERS
    fi
    if [ -z "${KAFKA_LOG_DIRS:-}" ] && [ -z "${KAFKA_LOG_DIR:-}" ]; then
        echo "kafka: KAFKA_LOG_DIRS not set, using $kafka_default_log_dirs (lost with the container)" >&2
        export KAFKA_LOG_DIRS="$kafka_default_log_dirs"
    fi
}

# server.properties for the current environment, one property per line, sorted by variable name.
kafka_properties() {
    for name in $(kafka_env_names); do
        property=$(kafka_property_name "$name")
        [ -n "$property" ] || continue
        eval "value=\${$name}"
        case "$value" in
            *\\*) value=$(printf '%s\n' "$value" | sed 's/\\/\\\\/g') ;;
        esac
        printf '%s=%s\n' "$property" "$value"
    done
}

# log4j2 properties for KAFKA_LOG4J_LOGGERS ("kafka.controller=WARN,org.apache.kafka=DEBUG"),
# appended to the image's log4j2.properties.  The key is derived from the logger name, so a
# logger the base file already sets is overridden (the last value of a key wins).
kafka_log4j_loggers() {
    printf '%s\n' "${KAFKA_LOG4J_LOGGERS:-}" | tr ',' '\n' | while IFS='=' read -r logger level; do
        logger=$(printf '%s' "$logger" | tr -d '[:space:]')
        level=$(printf '%s' "$level" | tr -d '[:space:]')
        [ -n "$logger" ] || continue
        [ -n "$level" ] || kafka_fail "KAFKA_LOG4J_LOGGERS: '$logger' has no level (logger=LEVEL,...)"
        key=$(printf '%s' "$logger" | tr -c 'A-Za-z0-9' '_')
        printf 'logger.%s.name = %s\nlogger.%s.level = %s\n' "$key" "$logger" "$key" "$level"
    done
}
