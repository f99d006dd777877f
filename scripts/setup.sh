#!/usr/bin/env bash
# Makes a fresh Debian 12 machine ready for swarmkit: Debian packages, .venv with the project,
# and a Docker engine for this machine. Idempotent: a second run installs and starts nothing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
state="${SWARMKIT_STATE_DIR:-/var/tmp/swarmkit}"
packages=(docker.io iproute2 iptables busybox-static docker-registry socat procps openssh-server openssh-client chromium)
# openssh-server: `sandbox up --endpoint ssh` runs its own sshd inside each sandbox host; this
# machine's own sshd is not needed (container images' policy-rc.d keeps apt from starting it).
# chromium: the tests open `verify --report`'s page in it, headless, and read its screenshot.

started=$SECONDS
log() { printf 'setup [%3ds]: %s\n' "$((SECONDS - started))" "$*"; }

# A long step says every 30 s that it is still at work: a CI log or a pipe shows no spinner.
with_heartbeat() {
    local what=$1 beat status=0
    shift
    (while sleep 30; do log "still $what..."; done) &
    beat=$!
    "$@" || status=$?
    kill "$beat" 2>/dev/null
    wait "$beat" 2>/dev/null || true
    return "$status"
}

command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
# The swarmkit/kafka image: jlink makes its Java runtime, Maven fetches Kafka's jars.
command -v jlink >/dev/null 2>&1 || packages+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || packages+=(maven)
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    with_heartbeat "installing Debian packages" apt-get update -qq
    with_heartbeat "installing Debian packages" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp="$venv/.installed-$(sha256sum "$root/pyproject.toml" | cut -c1-16)"
wheels="${SWARMKIT_CACHE:-/var/cache/swarmkit}/wheels"
if [ ! -f "$stamp" ]; then
    log "creating $venv with swarmkit and its dependencies"
    python3 -m venv "$venv"
    pip=("$venv/bin/pip" --disable-pip-version-check)
    # pyspark is published as a source archive only: its wheel is built once (minutes on a 2-core machine)
    # into the cache outside git, and every later install (a new clone, CI) takes it from there.
    pyspark=$(sed -n 's/^ *"\(pyspark==[^"]*\)",*$/\1/p' "$root/pyproject.toml")
    if ! ls "$wheels"/pyspark-"${pyspark#pyspark==}"-*.whl >/dev/null 2>&1; then
        log "building the $pyspark wheel once into $wheels (a few minutes the first time)"
        mkdir -p "$wheels"
        with_heartbeat "building the $pyspark wheel" "${pip[@]}" wheel -q --no-deps -w "$wheels" "$pyspark"
    fi
    "${pip[@]}" uninstall -q -y swarmkit >/dev/null 2>&1 || true  # the distribution's name before swarmkit-kafka
    with_heartbeat "installing Python packages" "${pip[@]}" install -q --find-links "$wheels" -e "$root[test,tansu,spark]"
    rm -f "$venv"/.installed-*
    touch "$stamp"
fi

if ! docker version >/dev/null 2>&1; then
    mkdir -p "$state"
    # A machine whose processes were stopped keeps their pid files; dockerd refuses to start on them.
    for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
        if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then rm -f "$pidfile"; fi
    done
    log "starting dockerd for this machine (log: $state/dockerd.log)"
    nohup dockerd >"$state/dockerd.log" 2>&1 &
    for _ in $(seq 1 60); do
        docker version >/dev/null 2>&1 && break
        sleep 0.5
    done
    docker version >/dev/null 2>&1 || { log "dockerd did not answer within 30 s; see $state/dockerd.log"; exit 1; }
fi
log "ready: $(docker version --format 'Docker Engine {{.Server.Version}}'), $("$venv/bin/swarmkit" --version 2>/dev/null || echo swarmkit)"

# Kafka's jars, the Kafka image's Java runtime and Spark's Kafka connector, into the cache outside
# git (/var/cache/swarmkit); a stamp per pom makes reruns free.
log "filling the cache: Kafka's jars and JMX exporter, the image's Java runtime, Debian's prometheus, alertmanager and node exporter, Spark's Kafka connector (nothing to do when filled)"
with_heartbeat "filling the cache from Maven Central" "$venv/bin/python" "$root/scripts/fill-cache.py"
log "done"
