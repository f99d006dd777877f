#!/bin/sh
# Run once while the swarmkit/kafka image is built (a RUN step of its Dockerfile): class-data-sharing
# archives, so every later JVM maps the classes it needs instead of loading and verifying them one by
# one (the tools' start takes about half the CPU with their archive; a broker's start less than without).
#   1. the Java runtime's own archive (java -Xshare:dump);
#   2. /opt/kafka/kafka.jsa: the classes a KRaft server loads up to serving, recorded by a throw-away
#      single-node Kafka (broker and controller in one JVM, on loopback) that is stopped right after;
#   3. /opt/kafka/tools.jsa: the classes Kafka's tools load, recorded by kafka-metadata-quorum
#      describing that server's quorum.
# kafka-server-start.sh and kafka-run-class.sh use an archive when it is there; without one (or when a
# JVM finds it does not match) they start as before.  Class paths must be spelled as the wrappers spell them.
set -eu
work=/tmp/swarmkit-cds
java=/opt/java/bin/java
log="-Dlog4j2.configurationFile=$work/log4j2.properties"

"$java" -Xshare:dump >/dev/null
mkdir -p "$work/data"
cat >"$work/server.properties" <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:29093
listeners=PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$work/data
offsets.topic.replication.factor=1
PROPERTIES
"$java" -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 $log -cp '/opt/kafka/libs/*' kafka.tools.StorageTool \
    format --cluster-id cds-cluster-id-00000000 --config "$work/server.properties" >/dev/null
"$java" -Xmx256m -XX:ArchiveClassesAtExit=/opt/kafka/kafka.jsa $log -cp '/opt/kafka/libs/*' kafka.Kafka \
    "$work/server.properties" >"$work/server.log" 2>&1 &
server=$!
waited=0
until grep -q "Kafka Server started" "$work/server.log"; do
    kill -0 "$server" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    [ "$waited" -lt 300 ] || { echo "cds.sh: the server did not start in 300 s" >&2; exit 1; }
    sleep 1
    waited=$((waited + 1))
done
"$java" -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit=/opt/kafka/tools.jsa $log \
    -cp '/opt/kafka/tools-libs/*' org.apache.kafka.tools.MetadataQuorumCommand \
    --bootstrap-controller 127.0.0.1:29093 describe --replication >/dev/null
kill -TERM "$server"
wait "$server" || true
rm -rf "$work"
chmod 0444 /opt/kafka/kafka.jsa /opt/kafka/tools.jsa
echo "cds.sh: archives made in ${waited}s" >&2
