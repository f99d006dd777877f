#!/bin/sh
# Stands in for Kafka's kafka-storage.sh in the recorder image: the controller entrypoint formats a dynamic
# quorum's storage with it; this prints the arguments it was given ("recorder: kafka-storage ARGS") instead.
echo "recorder: kafka-storage $*"
