"""A CA rotation as steps (pure): which CAs the brokers trust and which one issues their certificates.

``swarmkit certs rotate --ca`` replaces the cluster CA in three steps, each one rolled out (controllers,
then brokers, one at a time) before the next begins, so a client that trusts either CA keeps working:

1. a new CA is made, each CA's certificate cross-signed by the other; every node trusts both and
   presents a certificate from the old CA followed by the old CA certified by the new one;
2. the new CA issues every certificate; nodes present it followed by the new CA certified by the old
   one (a client that trusts only the old CA still builds a path, and keeps doing so after step 3);
3. the old CA leaves the trust bundle; its files are removed once this step is rolled out.

The step is kept in the stack's store (``ca-rotation.json``: the step whose material the store holds
and whether the cluster runs it), so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from swarmkit.errors import SpecError

STATE_FILE = "ca-rotation.json"
STEPS = (1, 2, 3)
CURRENT, NEXT, OLD = "ca", "ca-next", "ca-old"  # file stems in the store: <stem>.crt, <stem>.key
CROSS = "ca-cross.crt"  # the last rotation's two CAs, each certified by the other
STEP_TEXT = {
    1: "trust the old and the new CA",
    2: "certificates from the new CA",
    3: "drop the old CA",
}


@dataclass(frozen=True)
class Rotation:
    step: int  # the step whose material the store holds
    rolled: bool  # every controller and broker runs it


def remaining(state: Rotation | None) -> tuple[int, ...]:
    """The steps still to roll out: all three for a new rotation, from the interrupted one on otherwise."""
    if state is None:
        return STEPS
    return tuple(step for step in STEPS if step > state.step or (step == state.step and not state.rolled))


def trusted(state: Rotation | None) -> tuple[str, ...]:
    """The CAs (file stems) the nodes trust, in bundle order: the CA that issues the leaves first."""
    step = state.step if state else None
    return {1: (CURRENT, NEXT), 2: (CURRENT, OLD)}.get(step or 0, (CURRENT,))


def parse_state(text: str | None) -> Rotation | None:
    if text is None:
        return None
    try:
        data = json.loads(text)
        state = Rotation(int(data["step"]), bool(data["rolled"]))
    except (ValueError, KeyError, TypeError):
        state = Rotation(0, False)
    if state.step not in STEPS:
        raise SpecError(
            f"{STATE_FILE}: not a CA rotation state ({text.strip()[:60]!r})",
            hint='it holds {"step": 1|2|3, "rolled": true|false}; restore it or remove the rotation\'s files',
        )
    return state


def state_text(state: Rotation) -> str:
    return json.dumps({"step": state.step, "rolled": state.rolled}) + "\n"
