#!/bin/sh
# kafka-reassign-partitions.sh: org.apache.kafka.tools.reassign.ReassignPartitionsCommand, as in a Kafka distribution (see kafka-run-class.sh)
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.reassign.ReassignPartitionsCommand "$@"
