#!/bin/sh
# First step of every Kafka container swarmkit deploys (brokers and controllers, every security mode),
# mounted as a swarm config beside the other entrypoints.  It starts as root (the service's `user`),
# names each of the container's own addresses in /etc/hosts, then runs the rest as the image's user
# (appuser, as the official image does), with the JVM as PID 1.
#   local-names.sh COMMAND [ARGS...]
# Why: Kafka's SASL server looks up the host name of the address each client reached (KAFKA-19919).
# A client of a host-mode port reaches the container's docker_gwbridge address, which no /etc/hosts
# entry names, so every connection waits on a reverse DNS lookup: 1-10 s wherever the servers' DNS
# has no reverse zone or no upstream (air-gapped sites, the sandbox).  A name from /etc/hosts answers
# at once, and no DNS server is asked.
# Inputs (environment):
#   SWARMKIT_KAFKA_USER   the user Kafka runs as (default appuser)
set -eu

[ "$#" -gt 0 ] || { echo "swarmkit: local-names.sh needs the command to run" >&2; exit 64; }
user="${SWARMKIT_KAFKA_USER:-appuser}"
if [ "$$" != 1 ]; then  # not a container's first process: this is some host's /etc/hosts, not ours to change
    exec "$@"
fi
if [ "$(id -u)" != 0 ]; then
    echo "swarmkit: not root, /etc/hosts left as it is: SASL logins may wait on reverse DNS (run the service as root)" >&2
    exec "$@"
fi

name=$(hostname)
named=""
for address in $(ip -o addr show | awk '$2 != "lo" { sub("/.*", "", $4); print $4 }'); do
    if ! awk -v a="$address" '$1 == a { found = 1 } END { exit !found }' /etc/hosts; then
        printf '%s\t%s\n' "$address" "$name" >>/etc/hosts
        named="$named $address"
    fi
done
echo "swarmkit: /etc/hosts names this container's addresses as $name:${named:- (all named before)}" >&2
unset SWARMKIT_KAFKA_USER
# busybox su keeps the environment (only HOME, SHELL, USER and LOGNAME become the user's) and execs
exec su -s /bin/sh "$user" -c 'exec "$@"' swarmkit-kafka "$@"
