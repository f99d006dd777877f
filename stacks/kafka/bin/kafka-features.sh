#!/bin/sh
# kafka-features.sh: org.apache.kafka.tools.FeatureCommand, as in a Kafka distribution (see kafka-run-class.sh):
# describe, upgrade and downgrade the finalized feature levels (metadata.version, ...)
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.FeatureCommand "$@"
