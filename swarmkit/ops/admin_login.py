"""The admin's SCRAM credential on a cluster that is secured with ``sasl_ssl`` after it was formatted.

A controller gets the admin's credential only when it formats its storage (``--add-scram`` in
``stacks/apache/controller.sh``); a cluster formatted in another mode and deployed again in ``sasl_ssl``
keeps metadata without it, so swarmkit's own login (every check, every user change) would be refused.
Kafka's own tool adds it: ``kafka-configs.sh`` in a controller container, which holds the password as a
swarm secret (it never crosses the Docker API), reaching the brokers' internal listener over mutual TLS.
"""

from __future__ import annotations

from swarmkit import waits
from swarmkit.errors import DeployError, EngineError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.security.settings import ADMIN_USER
from swarmkit.stack.compose import StackRequest
from swarmkit.stack.deployed import SECURITY_LABEL, broker_service
from swarmkit.stack.engines import apache

CONFIGS_TOOL = "/opt/kafka/bin/kafka-configs.sh"
# $1 tool, $2 bootstrap, $3 client config, $4 user; the secret reads "SCRAM-SHA-512=[name=admin,password=...]"
ADD_CREDENTIAL = (
    'exec "$1" --bootstrap-server "$2" --command-config "$3" --alter --entity-type users --entity-name "$4"'
    ' --add-config "$(sed "s/name=[^,]*,//" "$SWARMKIT_SCRAM_FILE")"'
)


def needed(manager: Engine, stack: str, sasl: bool, kept_cluster_id: str | None) -> bool:
    """Whether ``sasl_ssl`` is deployed on storage formatted before (the swarm keeps its cluster id) by a
    stack that does not run in ``sasl_ssl`` now (another mode, or none after ``down``)."""
    if not sasl or not kept_cluster_id:
        return False
    spec = dockerapi.service_spec(manager, broker_service(stack))
    return spec is None or spec.labels.get(SECURITY_LABEL) != "sasl_ssl"


def restore(docker: DockerHosts, request: StackRequest, bound: float, report: waits.Progress) -> None:
    """Add the admin's credential once a broker of the new deployment answers on its internal listener."""
    first = apache.controller_set(request).controllers[0]
    command = _command(request.stack_name, request.listeners.internal_listener.port)
    service = f"{request.stack_name}_{first.service}"

    def look() -> str:
        try:
            apache.run_tool(docker[request.inventory.host(first.host)], service, command)
        except EngineError as error:
            return error.message.splitlines()[-1] if error.message else "the tool failed"
        return ""

    report(0, 1, "adding the admin's SCRAM credential (the cluster was formatted without it)")
    why = waits.until_ready(look, bound, lambda reason: report(0, 1, f"admin credential: {reason}"))
    if why:
        raise DeployError(
            f"the admin's SCRAM credential could not be added within {bound:g} s: {why}",
            hint="see `swarmkit status -i INVENTORY`; run `swarmkit up` again once every broker runs",
        )


def _command(stack: str, internal_port: int) -> list[str]:
    bootstrap = f"tasks.{broker_service(stack)}:{internal_port}"
    config = apache.internal_client_config().target
    return ["sh", "-c", ADD_CREDENTIAL, "sh", CONFIGS_TOOL, bootstrap, config, ADMIN_USER]
