"""Reaching the servers: the inventory file and one Docker client per host (endpoint and TLS included)."""
