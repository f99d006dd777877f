"""`swarmkit plan`: what `up` would change on the running cluster, read without changing anything."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from swarmkit.hosts.dockerapi import service_spec, swarm_nodes
from swarmkit.hosts.session import Session
from swarmkit.kafka import quotas
from swarmkit.kafka.admin import KafkaAdmin
from swarmkit.ops import upgrade
from swarmkit.ops.declared import (
    Changes,
    diff_quotas,
    diff_topics,
    diff_users,
    roll_reasons,
    topic_states,
    user_states,
    zone_moves,
)
from swarmkit.ops.deploy import render_for
from swarmkit.ops.plan import DeployPlan
from swarmkit.security import pki
from swarmkit.security.acls import Grant
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.deployed import DeployedStack

ADMIN_TIMEOUT = 15.0  # reading topics and their settings from a loaded broker


def _rendered_broker(plan: DeployPlan, session: Session) -> tuple[dict[str, str], str]:
    service = yaml.safe_load(render_for(plan, session).text)["services"]["broker"]
    env = {key: str(value).replace("$$", "$") for key, value in service.get("environment", {}).items()}
    return env, service["image"]


def read_changes(plan: DeployPlan, session: Session) -> Changes:
    """What `up` with this plan would change on the running cluster; reads, changes nothing."""
    inventory, options, docker = plan.inventory, plan.options, session.docker
    specs, declared_users = plan.topics, plan.users
    manager = docker[inventory.first_manager]
    deployed = DeployedStack.read(manager, options.stack_name)
    if deployed is None:
        topics, users = diff_topics(specs, {}), diff_users(declared_users, {})
        return Changes(options.stack_name, False, tuple(topics), (), (), tuple(users), quotas=tuple(diff_quotas(plan.quotas, {})))
    env, image = _rendered_broker(plan, session)
    spec = service_spec(manager, deployed.broker_service)
    version = inventory.stack.kafka_version
    port = options.listeners.external_listener.port
    release = tuple(upgrade.declared_lines(session, options.stack_name, port, version)) if version else ()
    running = spec.image if spec else ""
    rolls = roll_reasons(env, running if version else image, deployed.service.env, running)
    security = pki.admin_by_address(inventory, options.stack_name, deployed.security)
    bootstrap = f"{inventory.hosts[0].address}:{options.listeners.external_listener.port}"
    with KafkaAdmin(bootstrap, security, ADMIN_TIMEOUT) as kafka:
        topics = diff_topics(specs, topic_states(kafka, [s.name for s in specs])) if specs else []
        users = diff_users(declared_users, _user_states(declared_users, kafka) if deployed.security == "sasl_ssl" else {})
    moves = zone_moves(inventory, swarm_nodes(manager))
    limits = diff_quotas(plan.quotas, _quota_states(plan, bootstrap, security))
    return Changes(options.stack_name, True, tuple(topics), tuple(rolls), tuple(moves), tuple(users), release, tuple(limits))


def _quota_states(plan: DeployPlan, bootstrap: str, security: ClientSecurity | None) -> dict[quotas.Entity, dict[str, float]]:
    """The cluster's client quotas, read only when the inventory declares them."""
    return quotas.describe_quotas(bootstrap, ADMIN_TIMEOUT, security) if plan.quotas is not None else {}


def _user_states(declared: Mapping[str, tuple[Grant, ...]], kafka: KafkaAdmin) -> dict[str, tuple[Grant, ...]]:
    """The declared users the cluster has, with their grants (a sasl_ssl stack: swarmkit logs in as its admin)."""
    return user_states(kafka, list(declared)) if declared and kafka.security else {}
