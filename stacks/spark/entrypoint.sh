#!/bin/sh
# Starts one Spark standalone daemon with java itself (no Spark shell scripts, no bash):
#   swarmkit-spark master                  the master: RPC on SPARK_MASTER_PORT, web UI on SPARK_MASTER_WEBUI_PORT
#   swarmkit-spark worker spark://HOST:PORT  a worker offering SPARK_WORKER_MEMORY to executors
# SPARK_LOCAL_HOSTNAME is the name the daemon binds and advertises (the swarm node's hostname);
# SPARK_DAEMON_MEMORY the daemon's own heap.  The REST submission server stays off: it takes
# unauthenticated job submissions.
set -eu
role="${1:-}"
[ "$#" -gt 0 ] && shift
host="${SPARK_LOCAL_HOSTNAME:?SPARK_LOCAL_HOSTNAME must name this node}"
jvm="-Xmx${SPARK_DAEMON_MEMORY:-256m} -Dspark.master.rest.enabled=false"
case "$role" in
master)
    # shellcheck disable=SC2086  # $jvm is a list of options
    exec java $jvm -cp '/opt/spark/jars/*' org.apache.spark.deploy.master.Master \
        --host "$host" --port "${SPARK_MASTER_PORT:-7077}" --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" "$@"
    ;;
worker)
    # shellcheck disable=SC2086
    exec java $jvm -cp '/opt/spark/jars/*' org.apache.spark.deploy.worker.Worker \
        --host "$host" --port "${SPARK_WORKER_PORT:-7078}" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
        --memory "${SPARK_WORKER_MEMORY:-512m}" "$@"
    ;;
*)
    echo "usage: swarmkit-spark master | worker spark://HOST:PORT" >&2
    exit 64
    ;;
esac
