"""The HTML report drawn from a recorded `verify --spark --json` run (2-node sandbox): charts, map, escaping."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from swarmkit.checks import report as pages
from swarmkit.checks.report import ClusterLayout, MapNode
from swarmkit.checks.verify import VerifyReport

RECORDED = Path(__file__).parent / "recorded" / "verify_spark.json"
LAYOUT = ClusterLayout("kafka", (MapNode("hvc1", "10.205.0.11", "manager", 9001), MapNode("hvc2", "10.205.0.12", "worker")))


def recorded() -> VerifyReport:
    return pages.report_from_dict(json.loads(RECORDED.read_text()))


def bars(page: str, series: str | None = None) -> list[str]:
    """Every drawn value (of one series), as its data-value."""
    name = re.escape(series) if series else '[^"]*'
    pattern = '<rect class="bar" data-series="' + name + '" data-label="[^"]*" data-value="([^"]*)"'
    return re.findall(pattern, page)


def test_a_recorded_report_reads_back_as_it_was_written() -> None:
    data = json.loads(RECORDED.read_text())
    report = pages.report_from_dict(data)
    assert report.spark is not None and report.cluster is not None
    assert json.loads(json.dumps(report.to_dict())) == data


def test_every_chart_has_one_bar_per_broker_and_series() -> None:
    page = pages.render(recorded(), LAYOUT, "now")
    assert bars(page, "produce") == ["1960", "1988.1"] and bars(page, "consume") == ["314.9", "314.9"]
    assert bars(page, "p50") == ["14885", "14863"] and bars(page, "p99") == ["17160", "17252"]
    assert bars(page, "metadata request") == ["481.9", "614.3"]
    assert bars(page, "leaders") == ["2", "2"] and bars(page, "replicas") == ["4", "4"]
    assert bars(page, "lag") == ["0", "250"]  # audit / orders, billing / orders
    assert bars(page, "log directory") == ["5", "6"] and bars(page, "free") == ["819.2", "102.4"]
    assert len(bars(page)) == 20


def test_the_map_shows_each_node_its_broker_address_controller_and_verdict() -> None:
    page = pages.render(recorded(), LAYOUT, "now")
    assert re.findall(r'<g class="node" data-node="([^"]*)" data-verdict="([^"]*)"', page) == [("hvc1", "ok"), ("hvc2", "ok")]
    assert "controller 9001 (Leader)" in page and "advertises hvc2:9094" in page and "worker, 10.205.0.12" in page


def test_the_page_is_self_contained() -> None:
    page = pages.render(recorded(), LAYOUT, "now")
    assert "<script" not in page and not re.search(r'(src|href)="', page)
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_without_the_spark_job_the_page_says_so_and_draws_the_rest() -> None:
    page = pages.render(replace(recorded(), spark=None), LAYOUT, "now")
    assert "The Spark job did not run (run swarmkit verify --spark" in page
    assert bars(page, "produce") == [] and len(bars(page, "metadata request")) == 2


def test_a_failing_broker_is_red_on_the_map_and_its_problem_listed() -> None:
    report = recorded()
    failing = replace(report.brokers[1], reachable=False, fix="open 9094/tcp", detail="hvc2:9094 does not answer")
    page = pages.render(replace(report, brokers=(report.brokers[0], failing)), LAYOUT, "now")
    assert 'data-node="hvc2" data-verdict="failing"' in page and pages.FAIL in page
    assert "Verification failed" in page and "<li>hvc2: hvc2:9094 does not answer</li>" in page


def test_text_from_the_cluster_is_escaped() -> None:
    report = recorded()
    hostile = replace(report.brokers[0], detail='<script>alert("x")</script>', node="<b>n&1</b>")
    layout = ClusterLayout("<i>s</i>", (MapNode("<b>n&1</b>", 'a"b', "manager"),))
    page = pages.render(replace(report, brokers=(hostile,), changes=("<img src=x>",)), layout, "<now>")
    assert "<script>" not in page and "<b>" not in page and "<img" not in page and "<i>s" not in page
    assert "&lt;b&gt;n&amp;1&lt;/b&gt;" in page and "&lt;script&gt;" in page and "a&quot;b" in page


@pytest.mark.parametrize(
    ("given", "html", "spark_json"),
    [
        (None, None, None),
        ("reports/verify.html", Path("reports/verify.html"), "reports/verify.json"),
        ("out/r.json", None, "out/r.json"),
    ],
)
def test_report_names_the_page_and_the_spark_json_beside_it(given: str | None, html: Path | None, spark_json: str | None) -> None:
    assert pages.outputs(given) == (html, spark_json)


def test_the_page_names_each_node_kafka_release_and_the_finalized_level() -> None:
    page = pages.render(recorded(), LAYOUT, "now")
    assert "Kafka: broker 1 4.4.0, broker 2 4.4.0, broker 3 4.4.0, controller 9001 4.4.0" in page
    assert "finalized metadata.version 4.4-IV2 (33)" in page
