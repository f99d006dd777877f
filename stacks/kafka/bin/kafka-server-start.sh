#!/bin/sh
# kafka-server-start.sh server.properties [--override name=value]...
# The Kafka server JVM as Kafka's own script starts it: KAFKA_HEAP_OPTS (default -Xmx1G -Xms1G),
# KAFKA_JVM_PERFORMANCE_OPTS (default G1 as in kafka-run-class.sh), KAFKA_JMX_OPTS and
# KAFKA_JMX_PORT, KAFKA_GC_LOG_OPTS, KAFKA_OPTS, KAFKA_LOG4J_OPTS (default: the image's
# console-only log4j2 config).  exec: the JVM takes this process's place (PID 1 under run).
[ $# -ge 1 ] || {
    echo "usage: kafka-server-start.sh server.properties [--override name=value]..." >&2
    exit 64
}
heap=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
performance=${KAFKA_JVM_PERFORMANCE_OPTS:--server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15 -Djava.awt.headless=true}
log4j=${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties}
jmx=${KAFKA_JMX_OPTS:-}
if [ -n "${KAFKA_JMX_PORT:-}" ]; then
    host=${KAFKA_JMX_HOSTNAME:-$(hostname -i | cut -d' ' -f1)}
    jmx="${jmx:--Dcom.sun.management.jmxremote -Dcom.sun.management.jmxremote.authenticate=false -Dcom.sun.management.jmxremote.ssl=false}"
    jmx="$jmx -Djava.rmi.server.hostname=$host -Dcom.sun.management.jmxremote.local.only=false"
    jmx="$jmx -Dcom.sun.management.jmxremote.port=$KAFKA_JMX_PORT -Dcom.sun.management.jmxremote.rmi.port=$KAFKA_JMX_PORT"
fi
# The server's classes from the archive made when the image was built (cds.sh), when there is one.
cds=""
[ ! -r /opt/kafka/kafka.jsa ] || cds="-XX:SharedArchiveFile=/opt/kafka/kafka.jsa"
set -f # the option variables are split on spaces like Kafka's scripts do, never globbed
# shellcheck disable=SC2086
exec java $heap $performance $cds $jmx ${KAFKA_GC_LOG_OPTS:-} ${KAFKA_OPTS:-} $log4j \
    -cp '/opt/kafka/libs/*' kafka.Kafka "$@"
