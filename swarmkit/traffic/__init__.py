"""Real traffic through every broker: the PySpark verify job (batch and streaming) and a Spark cluster on the swarm."""
