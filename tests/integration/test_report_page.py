"""The report page of a recorded run opened in headless chromium: every chart drawn, the screenshot kept
under reports/test-artifacts/ (no sandbox needed; the page of a live run is opened in cluster/test_real_kafka.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from swarmkit.checks import report as pages
from tests.integration import browser
from tests.unit.checks.test_report import LAYOUT, recorded

pytestmark = pytest.mark.integration

ARTIFACTS = Path(__file__).parents[2] / "reports" / "test-artifacts"  # git-ignored


def test_chromium_draws_every_chart_of_a_recorded_run() -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = pages.write(ARTIFACTS / "recorded.html", recorded(), LAYOUT, "recorded")
    opened = browser.open_page(page, ARTIFACTS / "recorded.png")
    assert len(re.findall(r'<rect class="bar"', opened.dom)) == 20  # the lag's 2 groups, the disk's 2 brokers included
    assert all(opened.colours[browser.rgb(c)] > 100 for c in ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#455a64"))
    white = opened.colours[(255, 255, 255)] / sum(opened.colours.values())
    assert white < 0.95, f"the screenshot is {white:.0%} white"
