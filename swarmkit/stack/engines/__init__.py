"""Engines: one module per broker implementation, each turning a StackRequest into services.

Every engine module provides:
  NAME, DEFAULT_IMAGE         its name and default image
  KRAFT                       whether the listener plan needs a controller listener
  NEEDS_IDENTITY              whether brokers need the identity volume whatever the advertise mode
  SHARED_CLUSTER              whether the brokers form one cluster (False: each is its own)
  topic_broker_limit(n)       how many brokers one topic can be replicated over with n nodes
  check(request)              engine-specific validation (raises SpecError)
  services(request)           the compose services, in order
  volumes(request)            the named volumes it needs besides the identity volume
  config_files(request)       files from stacks/ its services mount as swarm configs
  notes(request)              comment lines to print above each service
  network_notes(request)      comment lines to add above the networks
Shared logic (listener model, identity volume, advertise env, escaping) lives in
swarmkit.stack.listeners and swarmkit.stack.render, never here.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from swarmkit.errors import SpecError

ENGINES = {"apache": "swarmkit.stack.engines.apache", "tansu": "swarmkit.stack.engines.tansu"}


def engine_names() -> tuple[str, ...]:
    return tuple(ENGINES)


def engine_module(name: str) -> ModuleType:
    """The module of engine ``name``; an unknown engine is a SpecError."""
    if name not in ENGINES:
        raise SpecError(f"engine: unknown engine '{name}'", hint=f"use one of {', '.join(ENGINES)}")
    return importlib.import_module(ENGINES[name])
