"""One exception family: every expected failure carries a message for the user and a hint."""

from __future__ import annotations

CHANGES_PENDING = 3  # `plan`: it ran and found changes for `up` (0: none; 1 and 2 stay failures and bad input)


class SwarmkitError(Exception):
    """An expected failure; the CLI prints it as one line plus a hint, never a traceback."""

    exit_code = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class InventoryError(SwarmkitError):
    """The inventory file is wrong; nothing was contacted."""

    exit_code = 2


class SpecError(SwarmkitError):
    """A topic spec, listener setting or option cannot be met; nothing was deployed."""

    exit_code = 2


class SandboxError(SwarmkitError):
    """The sandbox cannot be built or torn down on this machine."""


class EngineError(SwarmkitError):
    """A Docker engine did not answer or refused a request."""


class SshError(EngineError):
    """An engine reached over SSH could not be used: host key, key, Docker access, docker missing, port closed."""


class BrokerError(SwarmkitError):
    """A Kafka broker did not answer or refused a request (raised by the Kafka adapter, whatever the command)."""


class PreflightError(SwarmkitError):
    """Preflight found a problem; nothing was changed."""


class SwarmError(SwarmkitError):
    """A host is in a state swarmkit will not change on its own (e.g. another swarm)."""


class DeployError(SwarmkitError):
    """The stack did not converge or could not be deployed."""


class VerifyError(SwarmkitError):
    """Verification found brokers clients cannot use."""


class OperationError(SwarmkitError):
    """A day-2 operation (status, roll, down) cannot start, or stopped before the end."""
