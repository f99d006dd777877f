#!/usr/bin/env bash
# Fetches Spark's Kafka connector and its runtime dependencies (spark/pom.xml) from Maven Central
# into ${SWARMKIT_CACHE:-/var/cache/swarmkit}/spark-kafka-VERSION/jars, outside git. Idempotent: a
# stamp named after the pom's hash makes a second run do nothing (no Maven start-up).
set -euo pipefail

spark_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pom="$spark_dir/pom.xml"
version="$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' "$pom")"
dest="${SWARMKIT_CACHE:-/var/cache/swarmkit}/spark-kafka-$version"
stamp="$dest/.complete-$(sha256sum "$pom" | cut -c1-16)"

[ -f "$stamp" ] && exit 0
if ! command -v mvn >/dev/null 2>&1; then
    echo "fetch-jars: installing Debian's maven"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven >/dev/null
fi
echo "fetch-jars: Spark Kafka connector $version from Maven Central into $dest/jars"
rm -rf "$dest.tmp"
mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dest.tmp/jars"
rm -rf "$dest"
mv "$dest.tmp" "$dest"
touch "$stamp"
