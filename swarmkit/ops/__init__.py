"""What changes a running cluster: deploy and up, rolling restarts, moving replicas, retiring nodes, users, teardown."""
