"""Reading a starting broker's phase from its task and its log (pure)."""

from __future__ import annotations

from swarmkit.ops import startup
from swarmkit.stack.engines import apache


def test_the_furthest_marker_wins_whatever_the_line_order() -> None:
    # Docker returns a container's stdout before its stderr: the quorum line (stderr) comes last.
    log = "===> Launching kafka.Kafka\n[..] INFO Successfully registered broker 2 with broker epoch 45\nswarmkit: controller quorum listening (3 of 3 voters) after 6s\n"
    assert startup.log_phase(log, apache.START_MARKERS) == (7, "registered, catching up with the metadata")


def test_a_marker_ending_in_a_colon_keeps_the_latest_detail() -> None:
    log = (
        "swarmkit: waiting for the controller quorum: 0 of 3 voters listen, 2 needed (2s)\n"
        "swarmkit: waiting for the controller quorum: 1 of 3 voters listen, 2 needed (12s)\n"
    )
    assert startup.log_phase(log, apache.START_MARKERS)[1] == "waiting for the controller quorum: 1 of 3 voters listen, 2 needed"


def test_a_log_without_markers_has_no_phase() -> None:
    assert startup.log_phase("hello\n", apache.START_MARKERS) == (-1, "")
    assert startup.log_phase("===> Launching kafka.Kafka\n", ()) == (-1, "")


def test_last_lines_skip_blank_ones() -> None:
    assert startup.last_lines("a\n\nb\nc\n  \n", 2) == "b | c"
