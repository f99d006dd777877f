#!/bin/sh
# kafka-cluster.sh: org.apache.kafka.tools.ClusterTool (cluster id, unregister a broker), as in a Kafka distribution (see kafka-run-class.sh)
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.ClusterTool "$@"
