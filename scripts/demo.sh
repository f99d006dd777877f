#!/usr/bin/env bash
# The main job on a fresh machine: setup, a 3-host sandbox running a replicated Apache Kafka cluster
# (KRaft, three controllers), `swarmkit up` with topics at 3 replicas,
# `swarmkit verify --spark`, the per-broker report, and Prometheus scraping every broker and controller
# (`swarmkit metrics up`; its URL is printed last). Re-running starts from a fresh sandbox.
#
#   bash scripts/demo.sh                       # plain text, as the seed recipe
#   bash scripts/demo.sh --security sasl_ssl   # TLS + SCRAM on the client port, mutual TLS inside;
#                                              # also writes reports/client.properties for Java clients
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
security=plaintext
case "${1:-}" in
    "") ;;
    --security) security="${2:?--security needs sasl_ssl, ssl or plaintext}" ;;
    *) echo "usage: bash scripts/demo.sh [--security sasl_ssl|ssl|plaintext]" >&2; exit 2 ;;
esac
bash scripts/setup.sh
swarmkit=.venv/bin/swarmkit
inventory=swarmkit-sandbox.yaml
mkdir -p reports

"$swarmkit" sandbox down
"$swarmkit" sandbox up --nodes 3 --inventory "$inventory"
"$swarmkit" up -i "$inventory" --security "$security" --topics myTopic:6:3,anotherTopic:2:3
"$swarmkit" verify -i "$inventory" --spark --report reports/verify.html  # the Spark job's JSON beside it
if [ "$security" != plaintext ]; then
    "$swarmkit" client-config -i "$inventory" --security "$security" -o reports/client.properties
fi
metrics=$("$swarmkit" metrics up -i "$inventory" --json | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)["url"])')
echo "report: reports/verify.html (its data: reports/verify.json)   metrics: $metrics (alerts: ${metrics}classic/alerts)   (tear down with: $swarmkit sandbox down)"
