"""What a starting broker is doing, read from its task and its log, so a wait can report it and tell a
slow start (phases keep changing) from a stuck one (swarmkit.waits.StallClock)."""

from __future__ import annotations

from collections.abc import Sequence

from swarmkit.hosts.dockerapi import FAILED_START, TaskState, TaskStatus

LOG_LINES = 40  # how much of a starting container's log is read to find its phase

TASK_PHASES = {
    TaskStatus.NEW: "task created",
    TaskStatus.PENDING: "task waiting for a node's resources",
    TaskStatus.ASSIGNED: "task assigned to the node",
    TaskStatus.ACCEPTED: "task accepted by the node",
    TaskStatus.PREPARING: "preparing (pulling the image where it is missing)",
    TaskStatus.READY: "container created",
    TaskStatus.STARTING: "container starting",
    TaskStatus.RUNNING: "container running",
}


def task_phase(task: TaskState | None) -> str:
    """A task's phase as the swarm reports it (what happens before the broker's own log says anything)."""
    if task is None:
        return "no task scheduled yet"
    if task.state in FAILED_START:
        return f"task {task.state}: {task.error or task.message}; the swarm starts another"
    return TASK_PHASES.get(task.state, f"task {task.state}")


def log_phase(log: str, markers: Sequence[tuple[str, str]]) -> tuple[int, str]:
    """The furthest phase a container's log shows: (its rank in ``markers``, the phase), or (-1, '').

    ``markers`` pairs a text the broker prints with the phase it starts, in the order a start goes
    through them; ranks, not line order, decide, since Docker returns stdout before stderr.  A marker
    ending in ':' takes the rest of its line too (e.g. how many controller voters listen)."""
    best = (-1, "")
    for line in log.splitlines():
        for rank, (text, phase) in enumerate(markers):
            at = line.find(text)
            if at >= 0 and rank >= best[0]:
                detail = line[at + len(text) :].strip().split(" (", 1)[0] if text.endswith(":") else ""
                best = (rank, f"{phase}: {detail}" if detail else phase)
    return best


def last_lines(log: str, count: int = 3) -> str:
    """The last non-empty lines of a log, joined for a one-line report."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return " | ".join(lines[-count:])
