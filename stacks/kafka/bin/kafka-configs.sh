#!/bin/sh
# kafka-configs.sh: Kafka's ConfigCommand (SCRAM credentials, dynamic configs), as in a Kafka distribution
# (see kafka-run-class.sh).  The class moved from the server (kafka.admin, up to 4.3) to the tools
# (org.apache.kafka.tools, from 4.4): whichever the image's jars hold runs.
class=kafka.admin.ConfigCommand
for jar in /opt/kafka/tools-libs/kafka-tools-[0-9]*.jar; do
    if unzip -l "$jar" 2>/dev/null | grep -q 'org/apache/kafka/tools/ConfigCommand.class'; then
        class=org.apache.kafka.tools.ConfigCommand
    fi
done
exec "$(dirname "$0")/kafka-run-class.sh" "$class" "$@"
