#!/bin/sh
# kafka-topics.sh: org.apache.kafka.tools.TopicCommand, as in a Kafka distribution (see kafka-run-class.sh)
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.TopicCommand "$@"
