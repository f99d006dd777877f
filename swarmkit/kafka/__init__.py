"""The Kafka adapter: swarmkit's own client calls to a cluster (metadata, topics, partitions, SCRAM users) over confluent-kafka."""
