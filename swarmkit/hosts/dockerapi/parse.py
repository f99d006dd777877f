"""Docker's inspect JSON into swarmkit's typed values: pure functions, no Docker call, so recorded JSON tests them.

Fields Docker leaves out (no labels, no update yet, a worker's missing cluster) read as empty, never as errors;
only an object's ID is required.
"""

from __future__ import annotations

from swarmkit.hosts.dockerapi.models import (
    Availability,
    EngineInfo,
    NodeRole,
    NodeState,
    ServiceSpec,
    ServiceState,
    SwarmNode,
    SwarmState,
    TaskState,
    TaskStatus,
    member,
)

SERVICE_NAME_LABEL = "com.docker.swarm.service.name"  # set by swarm on every container of a service


def engine_info(endpoint: str, info: dict) -> EngineInfo:
    """``docker system info`` JSON; an engine outside any swarm is ``inactive``, a worker has no cluster id."""
    swarm = info.get("Swarm") or {}
    return EngineInfo(
        endpoint=endpoint,
        version=info.get("ServerVersion") or "",
        hostname=info.get("Name") or "",
        swarm_state=member(SwarmState, swarm.get("LocalNodeState") or "inactive", SwarmState.ERROR),
        swarm_node_id=swarm.get("NodeID") or "",
        swarm_cluster_id=(swarm.get("Cluster") or {}).get("ID") or "",
        memory_bytes=int(info.get("MemTotal") or 0),
    )


def swarm_node(node: dict) -> SwarmNode:
    """One ``docker node inspect`` document."""
    spec = node.get("Spec") or {}
    status = node.get("Status") or {}
    return SwarmNode(
        id=node["ID"],
        hostname=(node.get("Description") or {}).get("Hostname", ""),
        role=member(NodeRole, spec.get("Role", ""), NodeRole.WORKER),
        state=member(NodeState, status.get("State", ""), NodeState.UNKNOWN),
        availability=member(Availability, spec.get("Availability", ""), Availability.PAUSE),
        address=status.get("Addr") or "",
        labels=dict(spec.get("Labels") or {}),
    )


def _named_files(entries: list[dict] | None, name_key: str) -> tuple:
    """Configs or secrets as (name, target file) pairs: a renewed certificate is a new secret name."""
    return tuple(sorted((e.get(name_key, ""), (e.get("File") or {}).get("Name", "")) for e in entries or ()))


def container_fingerprint(container_spec: dict) -> tuple:
    """What decides whether a task runs the present spec: image, command, environment, mounts, configs, secrets."""
    mounts = tuple((m.get("Source"), m.get("Target"), bool(m.get("ReadOnly"))) for m in container_spec.get("Mounts") or ())
    configs = _named_files(container_spec.get("Configs"), "ConfigName")
    secrets = _named_files(container_spec.get("Secrets"), "SecretName")
    fields = ("Image", "Command", "Args", "Env", "Dir", "User", "Hostname")
    plain = tuple(tuple(value) if isinstance(value := container_spec.get(f), list) else value for f in fields)
    return plain + (mounts, configs, secrets)


def container_spec(service: dict) -> dict:
    """A service document's container spec (the part its tasks run)."""
    return ((service.get("Spec") or {}).get("TaskTemplate") or {}).get("ContainerSpec") or {}


def task_spec(service: dict) -> dict:
    """What swarm compares with a running task to decide whether to replace it: the service's task template (less
    its pull options, which a running task ignores) and its endpoint spec."""
    spec = service.get("Spec") or {}
    template = dict(spec.get("TaskTemplate") or {})
    template["ContainerSpec"] = {k: v for k, v in (template.get("ContainerSpec") or {}).items() if k != "PullOptions"}
    return {"TaskTemplate": template, "EndpointSpec": spec.get("EndpointSpec")}


def task_state(service: str, task: dict, wanted: tuple) -> TaskState:
    """One task document; ``wanted`` is the service's container fingerprint, to tell a task an update will replace."""
    status = task.get("Status") or {}
    node_id = task.get("NodeID", "")
    slot = task.get("Slot") or node_id  # a global service's tasks are named after their node
    return TaskState(
        id=task["ID"],
        name=f"{service}.{slot}.{task['ID']}",
        node_id=node_id,
        desired_state=member(TaskStatus, task.get("DesiredState", ""), TaskStatus.UNKNOWN),
        state=member(TaskStatus, status.get("State", ""), TaskStatus.UNKNOWN),
        message=status.get("Message", ""),
        error=status.get("Err", ""),
        container_id=(status.get("ContainerStatus") or {}).get("ContainerID", ""),
        created_at=task.get("CreatedAt", ""),
        current=container_fingerprint((task.get("Spec") or {}).get("ContainerSpec") or {}) == wanted,
        image=str(((task.get("Spec") or {}).get("ContainerSpec") or {}).get("Image") or "").split("@")[0],
    )


def service_state(name: str, service: dict, tasks: list[dict]) -> ServiceState:
    """A service document and its task documents: update status, environment, labels and every task."""
    container = container_spec(service)
    wanted = container_fingerprint(container)
    update = service.get("UpdateStatus") or {}
    env = dict(item.split("=", 1) for item in container.get("Env") or () if "=" in item)
    labels = dict((service.get("Spec") or {}).get("Labels") or {})
    states = tuple(task_state(name, task, wanted) for task in tasks)
    return ServiceState(name, update.get("State", ""), update.get("Message", ""), env, states, labels)


def service_spec(service: dict) -> ServiceSpec:
    """A service document's image, rolling-update delay, labels and secret mounts."""
    spec = service.get("Spec") or {}
    update = spec.get("UpdateConfig") or {}
    container = container_spec(service)
    secrets = tuple((s.get("SecretName", ""), (s.get("File") or {}).get("Name", "")) for s in container.get("Secrets") or ())
    return ServiceSpec(container.get("Image", ""), int(update.get("Delay") or 0), dict(spec.get("Labels") or {}), secrets)


def service_labels(service: dict) -> tuple[str, dict[str, str]]:
    """A service document's name and labels."""
    spec = service.get("Spec") or {}
    return spec.get("Name") or "", dict(spec.get("Labels") or {})


def volume_labels(volume: dict) -> tuple[str, dict[str, str]]:
    """A ``docker volume inspect`` document's name and labels."""
    return volume.get("Name") or "", dict(volume.get("Labels") or {})


def names_by_value(named: list[tuple[str, dict[str, str]]], label: str) -> dict[str, list[str]]:
    """(name, labels) pairs grouped by the value of one label ("" where it is absent), names sorted."""
    by_value: dict[str, list[str]] = {}
    for name, labels in named:
        by_value.setdefault(labels.get(label, ""), []).append(name)
    return {value: sorted(names) for value, names in by_value.items()}


def container_state(container: dict) -> tuple[str, str]:
    """A ``docker container inspect`` document's id and state (running, paused, exited, ...)."""
    state = container.get("State") or {}
    return container["Id"], "paused" if state.get("Paused") else str(state.get("Status") or "")


def publisher(container: dict) -> tuple[str, str]:
    """A container's name and the swarm service it belongs to ("" for a plain container)."""
    labels = (container.get("Config") or {}).get("Labels") or {}
    return (container.get("Name") or "").removeprefix("/"), labels.get(SERVICE_NAME_LABEL, "")
