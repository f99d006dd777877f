"""Defaults that a command's --help shows, kept apart from the code that uses them: the CLI reads them here
without importing that code, so `--help` and `--version` start fast (and the names they pick from)."""

from __future__ import annotations

from enum import StrEnum


class EngineName(StrEnum):
    """The broker engines a stack can run (swarmkit.stack.engines has one module for each)."""

    APACHE = "apache"
    TANSU = "tansu"


ROLL_BROKER_TIMEOUT = 300.0  # a rolled broker: back, registered and in sync
SPARK_UP_TIMEOUT = 180.0  # every Spark worker registered with the master
STREAM_SECONDS = 20.0  # how long the streaming verify's producer writes
STREAM_RATE = 5000  # records/s the streaming verify's producer writes
SANDBOX_MANAGERS = 3  # three swarm managers: the swarm and a KRaft quorum each survive the loss of one
DEFAULT_ENGINE = EngineName.APACHE  # a stack's engine, and a sandbox's when created or loaded, where none is named
