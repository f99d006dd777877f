"""Fill the cache outside git from Maven Central, Debian's archive and this machine's JDK: Kafka's jars and
the Java runtime of the swarmkit/kafka image, the JMX exporter and Debian's node exporter for the swarmkit/probe
image, Debian's prometheus and prometheus-alertmanager packages for the swarmkit/prometheus and
swarmkit/alertmanager images, and Spark's Kafka connector. Run by scripts/setup.sh, so that no later step
needs the network; when nothing changed it does nothing."""

from __future__ import annotations

import sys

from swarmkit.errors import SwarmkitError
from swarmkit.images import image
from swarmkit.traffic import spark as sparkjob


def main() -> int:
    try:
        image.kafka_recipe()
        image.probe_recipe()
        image.prometheus_recipe()
        image.alertmanager_recipe()
        sparkjob.fetch_connector()
    except SwarmkitError as error:
        print(f"setup: {error.message}\nhint: {error.hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
