"""Fill the cache outside git from Maven Central, Debian's archive and this machine's JDK: Kafka's jars,
the JMX exporter and the Java runtime of the swarmkit/kafka image, Debian's prometheus package for the
swarmkit/prometheus image, and Spark's Kafka connector. Run by scripts/setup.sh, so that no later step
needs the network; when nothing changed it does nothing."""

from __future__ import annotations

import sys

from swarmkit.errors import SwarmkitError
from swarmkit.images import image
from swarmkit.traffic import spark as sparkjob


def main() -> int:
    try:
        image.kafka_recipe()
        image.prometheus_recipe()
        sparkjob.fetch_connector()
    except SwarmkitError as error:
        print(f"setup: {error.message}\nhint: {error.hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
