#!/usr/bin/env bash
# The main job on a fresh machine: setup, a 3-host sandbox running a replicated Apache Kafka cluster
# (KRaft, three controllers), `swarmkit up` with topics at 3 replicas,
# `swarmkit verify --spark`, and the per-broker report. Re-running starts from a fresh sandbox.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
swarmkit=.venv/bin/swarmkit
inventory=swarmkit-sandbox.yaml
mkdir -p reports

"$swarmkit" sandbox down
"$swarmkit" sandbox up --nodes 3 --inventory "$inventory"
"$swarmkit" up -i "$inventory" --topics myTopic:6:3,anotherTopic:2:3
"$swarmkit" verify -i "$inventory" --spark --report reports/verify.json
echo "report: reports/verify.json   (tear down with: $swarmkit sandbox down)"
