#!/bin/sh
# kafka-storage.sh: kafka.tools.StorageTool, as in a Kafka distribution (see kafka-run-class.sh)
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
