"""`swarmkit certs rotate`: new certificates for every broker and controller, or a new cluster CA, rolled out
one node at a time under traffic.

Without ``--ca`` the cluster's CA issues every certificate again (each broker's, and the internal one
brokers and controllers authenticate each other with); with ``--ca`` the CA itself is replaced in the
three steps of ``swarmkit.security.rotation``.  Each step is rolled out the same way: the brokers by
``ops.roll`` (the new secrets on the broker service, one broker at a time, each back and in sync before
the next), then each controller service in turn, each back in the quorum and caught up before the next;
a step ends when every partition is in sync again (the restarts leave replicas catching up for a while:
the wait is bounded by the timeout, and shows on the progress lines).
Everything is checked before the store or the cluster changes: a deployed TLS stack, the CA in the
store, a certificate kept for every broker, a healthy cluster.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from swarmkit import files
from swarmkit.checks import health
from swarmkit.defaults import ROLL_BROKER_TIMEOUT
from swarmkit.errors import OperationError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, SecretChange
from swarmkit.hosts.session import Session
from swarmkit.ops import controllers, roll
from swarmkit.security import certs, pki, rotation
from swarmkit.security.settings import BROKER_TARGET, ClientSecurity, SecretFile
from swarmkit.stack.compose import secret_change
from swarmkit.stack.deployed import DeployedStack, broker_service
from swarmkit.swarm.view import active_manager, engine_states
from swarmkit.waits import Progress

BROKER_FILE = re.compile(re.escape(BROKER_TARGET).replace(r"\{broker_id\}", r"([0-9]+)"))
RENEW_STEP = 0  # certs rotate without --ca: one step, every certificate issued again by the same CA


@dataclass(frozen=True)
class RotateOptions:
    stack_name: str = "kafka"
    ca: bool = False  # replace the CA (three steps) instead of only the certificates it issued
    external_port: int = 9094
    timeout: float = ROLL_BROKER_TIMEOUT  # per broker or controller: back and caught up


@dataclass(frozen=True)
class StepReport:
    step: int  # 0: certificates only; 1-3: the CA rotation's steps
    what: str
    brokers: roll.RollReport
    controllers: tuple[str, ...]  # controller services restarted, in order
    seconds: float


@dataclass(frozen=True)
class RotateReport:
    stack: str
    steps: tuple[StepReport, ...]
    expiry: pki.Expiry
    total_s: float

    @property
    def ok(self) -> bool:
        return all(step.brokers.ok for step in self.steps)

    def error(self) -> OperationError:
        failed = next(step for step in self.steps if not step.brokers.ok)
        stopped = failed.brokers.error()
        return OperationError(f"step {failed.step}: {stopped.message}", hint=f"{stopped.hint}; certs rotate resumes there")

    def to_dict(self) -> dict:
        steps = [
            {
                "step": s.step,
                "what": s.what,
                "brokers": s.brokers.to_dict(),
                "controllers": list(s.controllers),
                "seconds": round(s.seconds, 1),
            }
            for s in self.steps
        ]
        expiry = {"ca_days": self.expiry.ca_days, "broker_days": self.expiry.broker_days}
        return {"stack": self.stack, "ok": self.ok, "steps": steps, "expiry": expiry, "total_s": round(self.total_s, 1)}


@dataclass(frozen=True)
class _Plan:
    manager: Engine
    store: pki.Pki
    brokers: tuple[tuple[int, tuple[str, ...]], ...]  # (broker id, the names its kept certificate holds)
    sasl: bool
    login: ClientSecurity | None
    addresses: tuple[tuple[str, int], ...]  # every node's client port: the quorum is described through them
    steps: tuple[int, ...]


# --- pure ----------------------------------------------------------------------------------------


def broker_ids(mounted: Sequence[tuple[str, str]]) -> tuple[int, ...]:
    """The broker ids whose certificates the broker service mounts."""
    return tuple(sorted(int(match.group(1)) for _, target in mounted if (match := BROKER_FILE.fullmatch(target))))


def steps_for(ca: bool, state: rotation.Rotation | None) -> tuple[int, ...]:
    """The steps this run rolls out; a CA rotation under way must be finished with --ca first."""
    if ca:
        return rotation.remaining(state)
    if state is not None:
        raise SpecError(
            f"a CA rotation is under way (step {state.step} of 3 {'rolled out' if state.rolled else 'started'})",
            hint="finish it first: swarmkit certs rotate --ca (it resumes where it stopped)",
        )
    return (RENEW_STEP,)


# --- the cluster ---------------------------------------------------------------------------------


def _plan(session: Session, options: RotateOptions) -> _Plan:
    """Every check before anything changes: a TLS stack, the CA in the store, a kept certificate per broker."""
    inventory, docker = session.inventory, session.docker
    manager = docker[active_manager(inventory, engine_states(inventory, docker))]
    state = roll.replicated_brokers(manager, options.stack_name)
    security = DeployedStack(options.stack_name, state).security
    if security == "plaintext":
        raise SpecError(
            f"stack '{options.stack_name}' runs without TLS: it has no certificates to rotate",
            hint="deploy it with TLS first: swarmkit up -i INVENTORY --security sasl_ssl (or ssl)",
        )
    store = pki.Pki(pki.store_dir(inventory, options.stack_name))
    store.kept_ca()
    steps = steps_for(options.ca, store.rotation())
    spec = dockerapi.service_spec(manager, broker_service(options.stack_name))
    brokers = tuple((broker_id, _kept_names(store, broker_id)) for broker_id in broker_ids(spec.secrets if spec else ()))
    roll.check_ready(session, _roll_options(options))
    return _Plan(
        manager,
        store,
        brokers,
        security == "sasl_ssl",
        pki.admin_by_address(inventory, options.stack_name, security),
        tuple((host.address, options.external_port) for host in inventory.hosts),
        steps,
    )


def _kept_names(store: pki.Pki, broker_id: int) -> tuple[str, ...]:
    """What broker ``broker_id``'s certificate names (it names what the broker advertises; a deploy keeps it so)."""
    path = store.directory / f"broker-{broker_id}.crt"
    kept = files.read_kept(path)
    if kept is None:
        raise SpecError(
            f"{store.directory}: no certificate kept for broker {broker_id}, which the stack mounts",
            hint="run `swarmkit deploy -i INVENTORY` with the cluster's options first: it issues one for every broker",
        )
    return certs.sans_of(kept)


def rotate(session: Session, options: RotateOptions) -> RotateReport:
    """Roll out each step (brokers, then controllers); stop at the first broker that does not come back."""
    started = time.monotonic()
    plan = _plan(session, options)
    done: list[StepReport] = []
    for step in plan.steps:
        done.append(_roll_out(session, plan, options, step))
        if not done[-1].brokers.ok:
            break
    return RotateReport(options.stack_name, tuple(done), pki.expiry(plan.store), time.monotonic() - started)


def _roll_out(session: Session, plan: _Plan, options: RotateOptions, step: int) -> StepReport:
    started = time.monotonic()
    what = rotation.STEP_TEXT.get(step, "every certificate issued again by the cluster CA")
    session.progress(0, 1, f"step {step}: {what}" if step else what)
    if step != RENEW_STEP:
        plan.store.begin_step(step)
    material = pki.material(plan.store, plan.brokers, renew=step in (RENEW_STEP, 1))
    # given time to be in sync: the step before restarted every broker and controller
    brokers = roll.roll(session, replace(_roll_options(options), secrets=material.broker_secrets(), settle=options.timeout))
    if not brokers.ok:
        return StepReport(step, what, brokers, (), time.monotonic() - started)
    restarted = _roll_controllers(session, plan, options, material.controller_secrets(plan.sasl))
    if step != RENEW_STEP:
        plan.store.step_rolled(step)
    _settle(session, options, step)
    return StepReport(step, what, brokers, restarted, time.monotonic() - started)


def _settle(session: Session, options: RotateOptions, step: int) -> None:
    """After a step's restarts, until every partition is in sync again (bounded): the next step's first broker
    (or the operator's next roll) takes a replica away, and the restarts leave some catching up for a while."""
    why = roll.wait_in_sync(session, _roll_options(options), options.timeout)
    if why:
        raise not_settled(step, options.timeout, why)


def not_settled(step: int, waited: float, why: str) -> OperationError:
    """A step rolled out whose cluster did not get back in sync: what to look at, and where a new run resumes."""
    done = f"step {step} of the CA rotation" if step != RENEW_STEP else "every new certificate"
    look = "see `swarmkit status -i INVENTORY` for the broker that lags or is down"
    then = (
        f"once every partition is in sync, run certs rotate --ca again: it resumes at step {step + 1}"
        if step in rotation.STEPS[:-1]
        else "the rotation itself is complete"
    )
    return OperationError(
        f"{done} is rolled out, but the cluster is not back in sync after {waited:g} s: {why}", hint=f"{look}; {then}"
    )


def _roll_options(options: RotateOptions) -> roll.RollOptions:
    return roll.RollOptions(stack_name=options.stack_name, external_port=options.external_port, broker_timeout=options.timeout)


def _roll_controllers(session: Session, plan: _Plan, options: RotateOptions, secrets: tuple[SecretFile, ...]) -> tuple[str, ...]:
    """Each controller service whose secrets changed, one at a time, each back in the quorum before the next."""
    restarted = []
    view = controllers.QuorumView(plan.manager, plan.addresses, plan.login)
    kept = health.kept_controllers(session.inventory, session.docker, options.stack_name).controllers
    for index, (name, node_id) in enumerate((c.service, c.node_id) for c in kept):
        service = f"{options.stack_name}_{name}"
        spec = dockerapi.service_spec(plan.manager, service)
        change = secret_change(options.stack_name, spec.secrets if spec else (), secrets)
        if change is None:
            continue
        report = functools.partial(_say, session.progress, index, len(kept), name)
        report(f"restarting controller {node_id} with its new certificates")

        def update(service: str = service, change: SecretChange = change) -> None:
            roll.create_secrets(plan.manager, options.stack_name, secrets)
            dockerapi.update_service(plan.manager, service, secrets=change)

        controllers.restart(view, service, node_id, update, options.timeout, report, "run certs rotate again to resume")
        restarted.append(name)
    return tuple(restarted)


def _say(progress: Progress, index: int, total: int, name: str, message: str) -> None:
    progress(index, total, f"{name}: {message}")
