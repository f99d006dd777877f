"""A swarm node's role: what the inventory asks of a host and what Docker reports of a node (one word for both)."""

from __future__ import annotations

from enum import StrEnum


class NodeRole(StrEnum):
    MANAGER = "manager"
    WORKER = "worker"
