"""Fixtures shared by the integration tests: real tansu brokers running as local processes."""

from tests.integration.tansu_local import local_brokers, misadvertised_brokers

__all__ = ["local_brokers", "misadvertised_brokers"]
