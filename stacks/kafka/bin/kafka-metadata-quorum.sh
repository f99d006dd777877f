#!/bin/sh
# kafka-metadata-quorum.sh: org.apache.kafka.tools.MetadataQuorumCommand, as in a Kafka distribution (see kafka-run-class.sh)
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.MetadataQuorumCommand "$@"
