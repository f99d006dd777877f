"""The server group: who the hosts are, how to reach their engines, and their roles."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Host:
    name: str
    endpoint: str
    address: str
    role: str = "worker"
    labels: dict[str, str] = field(default_factory=dict)
    insecure: bool = False

    @property
    def is_manager(self) -> bool:
        return self.role == "manager"


@dataclass(frozen=True)
class Inventory:
    hosts: tuple[Host, ...]
    path: str = ""

    @property
    def managers(self) -> tuple[Host, ...]:
        return tuple(h for h in self.hosts if h.is_manager)

    @property
    def first_manager(self) -> Host:
        return self.managers[0]

    def host(self, name: str) -> Host:
        for candidate in self.hosts:
            if candidate.name == name:
                return candidate
        raise KeyError(name)
