"""Network checks before anything is deployed: probes between hosts, the port matrix, memory."""
