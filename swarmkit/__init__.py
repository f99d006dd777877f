"""swarmkit: Kafka on Docker Swarm that every client can reach."""

__version__ = "0.1.0"
