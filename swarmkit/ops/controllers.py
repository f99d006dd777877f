"""The KRaft controllers restarted one at a time (`certs rotate`, `upgrade`): one controller service changed,
then waited for until its new task runs and the quorum, described through a broker, shows it caught up with
the leader's log end since it restarted; only then the next.  The others keep a majority and a leader."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from swarmkit import waits
from swarmkit.errors import BrokerError, OperationError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, TaskStatus
from swarmkit.kafka import quorum
from swarmkit.security.settings import ClientSecurity

DESCRIBE_TIMEOUT = 5.0


def controller_not_ready(state: quorum.QuorumState, node_id: int, since_ms: int) -> str:
    """Why controller ``node_id`` is not back in the quorum since ``since_ms`` ("" when it is)."""
    if state.leader < 0:
        return "no controller leads the quorum"
    voter = next((v for v in state.voters if v.node_id == node_id), None)
    if voter is None:
        return f"controller {node_id} is not among the quorum's voters"
    if voter.node_id != state.leader and voter.last_caught_up_ms < since_ms:
        return f"controller {node_id} has not caught up with the leader since it restarted"
    return ""


@dataclass(frozen=True)
class QuorumView:
    """How the quorum is read: every node's client port (the first that answers describes it), swarmkit's login."""

    manager: Engine
    addresses: tuple[tuple[str, int], ...]
    login: ClientSecurity | None

    def describe(self) -> quorum.QuorumState:
        failure = BrokerError("no broker to ask")
        for host, port in self.addresses:
            try:
                return quorum.describe_quorum(host, port, DESCRIBE_TIMEOUT, self.login)
            except BrokerError as error:
                failure = error
        raise failure

    def why_not_back(self, node_id: int, since_ms: int) -> str:
        try:
            return controller_not_ready(self.describe(), node_id, since_ms)
        except BrokerError as error:
            return f"the quorum cannot be described: {error.message}"


def running_container(manager: Engine, service: str) -> str:
    """The container of the service's task that runs its present spec ("" while there is none)."""
    state = dockerapi.service_state(manager, service)
    task = (
        next((t for t in state.tasks if t.current and t.state == t.desired_state == TaskStatus.RUNNING), None) if state else None
    )
    return task.container_id if task else ""


def restart(
    view: QuorumView,
    service: str,
    node_id: int,
    change: Callable[[], None],
    timeout: float,
    report: Callable[[str], None],
    resume: str,
) -> None:
    """``change`` the controller's service (swarm replaces its task), then wait until it is back and caught up;
    OperationError after ``timeout`` s, ``resume`` saying how to go on."""
    before = running_container(view.manager, service)
    change()
    _wait_back(view, service, node_id, before, timeout, report, resume)


def redeploy(
    view: QuorumView,
    service: str,
    node_id: int,
    deploy: Callable[[], None],
    timeout: float,
    report: Callable[[str], None],
) -> bool:
    """``deploy`` the controller's service alone as the stack renders it; when that changed what swarm compares
    with its task (so swarm replaces the task), wait until it is back and caught up.  Whether it restarted."""
    before, spec = running_container(view.manager, service), dockerapi.task_spec(view.manager, service)
    deploy()
    if dockerapi.task_spec(view.manager, service) == spec:
        return False
    report(f"controller {node_id}: the stack changes its spec, restarting it alone")
    _wait_back(view, service, node_id, before, timeout, report, "run the same command again")
    return True


def _wait_back(
    view: QuorumView, service: str, node_id: int, before: str, timeout: float, report: Callable[[str], None], resume: str
) -> None:
    """Wait until the service runs another container than ``before`` and the quorum shows it caught up."""
    since_ms = 0

    def look() -> str:
        nonlocal since_ms
        if not since_ms:
            container = running_container(view.manager, service)
            since_ms = int(time.time() * 1000) if container and container != before else 0
        return view.why_not_back(node_id, since_ms) if since_ms else "its new task is not running yet"

    why = waits.until_ready(look, timeout, report)
    if why:
        raise OperationError(
            f"controller {node_id} did not come back within {timeout:g} s: {why}",
            hint=f"see `swarmkit status -i INVENTORY` and the controller's logs; {resume}",
        )
    report(f"controller {node_id} back and caught up")
