"""The one adapter over Docker: every engine call in swarmkit goes through here, one module per noun.

``parse`` turns Docker's JSON into the ``models`` (pure, tested on recorded JSON); ``calls`` runs the
requests (reads through the Engine API, the ``docker`` SDK; what the Docker CLI does best through
python-on-whales) and words their failures; ``engine``, ``swarm``, ``services``, ``stacks``, ``containers``,
``images`` and ``volumes`` are the requests.  Callers use the names below: ``dockerapi.service_state(...)``.
"""

from swarmkit.hosts.dockerapi.containers import (
    container_output,
    container_stdout,
    exec_in_container,
    exec_in_service,
    exec_script,
    force_remove_container,
    labelled_containers,
    port_publishers,
    remove_labelled_containers,
    run_detached,
    run_with_volume,
    service_container,
    start_host_network_script,
    stop_container,
)
from swarmkit.hosts.dockerapi.engine import DockerHosts, Engine, engine_info, wait_until_ready
from swarmkit.hosts.dockerapi.images import build_image, ensure_image, has_image, load_image, push_image, save_image
from swarmkit.hosts.dockerapi.models import EngineInfo, SecretChange, ServiceSpec, ServiceState, SwarmNode, TaskState
from swarmkit.hosts.dockerapi.services import (
    create_secret,
    remove_secrets,
    remove_service,
    run_job_on_node,
    service_spec,
    service_state,
    update_service,
)
from swarmkit.hosts.dockerapi.stacks import deploy_stack, names_by_label, remove_stack, stack_leftovers, stack_services
from swarmkit.hosts.dockerapi.swarm import (
    join_token,
    remove_node,
    remove_node_labels,
    set_node_availability,
    set_node_role,
    swarm_init,
    swarm_join,
    swarm_leave,
    swarm_nodes,
    update_node_labels,
)
from swarmkit.hosts.dockerapi.volumes import ensure_volume, remove_labelled_volumes

__all__ = [
    "DockerHosts",
    "Engine",
    "EngineInfo",
    "SecretChange",
    "ServiceSpec",
    "ServiceState",
    "SwarmNode",
    "TaskState",
    "build_image",
    "container_output",
    "container_stdout",
    "create_secret",
    "deploy_stack",
    "engine_info",
    "ensure_image",
    "ensure_volume",
    "exec_in_container",
    "exec_in_service",
    "exec_script",
    "force_remove_container",
    "has_image",
    "join_token",
    "labelled_containers",
    "load_image",
    "names_by_label",
    "port_publishers",
    "push_image",
    "remove_labelled_containers",
    "remove_labelled_volumes",
    "remove_node",
    "remove_node_labels",
    "remove_secrets",
    "remove_service",
    "remove_stack",
    "run_detached",
    "run_job_on_node",
    "run_with_volume",
    "save_image",
    "service_container",
    "service_spec",
    "service_state",
    "set_node_availability",
    "set_node_role",
    "stack_leftovers",
    "stack_services",
    "start_host_network_script",
    "stop_container",
    "swarm_init",
    "swarm_join",
    "swarm_leave",
    "swarm_nodes",
    "update_node_labels",
    "update_service",
    "wait_until_ready",
]
