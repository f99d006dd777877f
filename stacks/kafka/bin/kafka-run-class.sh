#!/bin/sh
# kafka-run-class.sh CLASS [ARGS...]: a Kafka command-line tool in a small JVM (128 MiB heap,
# serial GC, quick start), logging warnings to stderr (KAFKA_TOOLS_LOG4J_LOGLEVEL).  The broker's
# KAFKA_HEAP_OPTS/KAFKA_OPTS are deliberately not used: `docker exec` inherits them from the
# server's environment, and a second 1 GiB heap (or a second JMX agent port) would not fit.
# Classes of the kafka-tools artifact (org.apache.kafka.tools.*) run on /opt/kafka/tools-libs,
# everything else (kafka.tools.StorageTool, kafka.Kafka, ...) on the server's /opt/kafka/libs.
[ $# -ge 1 ] || {
    echo "usage: kafka-run-class.sh CLASS [ARGS...]" >&2
    exit 64
}
# Each class path has the class-data-sharing archive made when the image was built (cds.sh).
case "$1" in
    org.apache.kafka.tools.*) classpath='/opt/kafka/tools-libs/*' archive=/opt/kafka/tools.jsa ;;
    *) classpath='/opt/kafka/libs/*' archive=/opt/kafka/kafka.jsa ;;
esac
cds=""
[ ! -r "$archive" ] || cds="-XX:SharedArchiveFile=$archive"
# shellcheck disable=SC2086  # $cds is one option or none
exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $cds -Djava.awt.headless=true \
    -Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties -cp "$classpath" "$@"
