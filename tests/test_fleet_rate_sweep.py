"""A sweep run with --request-rate has its peak and knee on the rate axis: the fleet summary
says so and the exporter puts them in `plateau_sweep_*_request_rate`, apart from the
concurrency gauges, read back from real SQLite, the OpenMetrics text and a real Prometheus
running the Grafana dashboard's knee query."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import start_http_server
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from console.bench.models import RunMeta, StepMetrics, StepResult
from console.fleet.history import HistoryReader
from console.fleet.metrics import FleetView, HostView
from console.fleet.summary import summarize
from console.store.db import RunStore
from tests.support.cli_hosts import wait_for
from tests.support.fleet_fixtures import GRAPH_LINE, T0, host_state
from tests.support.prometheus_run import fleet_registry, prometheus_scraping, query
from tests.support.report_fixtures import reference_run
from widgets.fleet_rows import cells

DASHBOARD = Path(__file__).parent.parent / "docs" / "grafana" / "plateau.json"
# Offered rate -> total tok/s: +40 % from 2 to 4 req/s, then +3 % to 8, then all at once.
RATES = [(2.0, 5000.0), (4.0, 7000.0), (8.0, 7210.0), (math.inf, 7300.0)]


def _rate_run(db: Path) -> None:
    with RunStore(db) as store:
        run_id = store.create_run(RunMeta(host="rated", profile="p", server_version="0.5.23",
                                          spec={"endpoint": "generate"}),
                                  started_at=1_767_800_000.0)
        for index, (rate, total) in enumerate(RATES):
            metrics = StepMetrics(concurrency=256, completed=100, total_tok_s=total,
                                  request_rate=rate, max_concurrency=256)
            store.add_step(run_id, StepResult(index=index, concurrency=256, status="ok",
                                              metrics=metrics))
        store.finish_run(run_id, "finished")


def _view(tmp_path: Path) -> FleetView:
    db = tmp_path / "history.sqlite3"
    reference_run(db)  # host "demo": a concurrency sweep that saturates at 64
    _rate_run(db)
    known = HistoryReader(db).read(["demo", "rated"])
    hosts = []
    for name in ("demo", "rated"):
        summary = summarize(host_state(GRAPH_LINE, name=name), T0,
                            last_run=known[name].last_run)
        hosts.append(HostView(summary, True, ""))
    return FleetView(hosts, cpu_s=0.0)


def test_a_rate_sweep_is_summarised_on_its_axis(tmp_path: Path) -> None:
    demo, rated = (h.summary.sweep for h in _view(tmp_path).hosts)
    assert demo is not None and rated is not None
    assert (demo.axis, demo.knee_kind, demo.knee_concurrency) == ("concurrency", "saturates", 64)
    assert demo.knee_request_rate is None and demo.peak_request_rate is None
    assert (rated.axis, rated.knee_kind) == ("rate", "saturates")
    assert (rated.knee_request_rate, rated.knee_concurrency) == (4.0, None)
    # The peak is the best rate's, not all rates averaged under their one concurrency cap.
    assert (rated.peak_tok_s, rated.peak_request_rate) == (7300.0, math.inf)
    assert rated.peak_concurrency is None


def test_the_fleet_row_names_the_rate(tmp_path: Path) -> None:
    rated = _view(tmp_path).hosts[1].summary
    shown = [cell.plain for cell in cells(rated)]
    assert "knee 4 req/s" in shown
    assert any(cell.endswith("@inf req/s") for cell in shown), shown


def test_the_exposition_keeps_the_axes_apart(tmp_path: Path) -> None:
    text = openmetrics(fleet_registry(_view(tmp_path))).decode()
    samples: dict[str, dict[str, tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, {})[s.labels.get("host", "")] = (s.labels, float(s.value))
    assert set(samples["plateau_sweep_knee_concurrency"]) == {"demo"}
    assert set(samples["plateau_sweep_knee_request_rate"]) == {"rated"}
    labels, value = samples["plateau_sweep_knee_request_rate"]["rated"]
    assert (labels["kind"], value) == ("saturates", 4.0)
    assert samples["plateau_sweep_knee_concurrency"]["demo"][1] == 64.0
    assert samples["plateau_sweep_peak_request_rate"]["rated"][1] == math.inf
    assert set(samples["plateau_sweep_peak_concurrency"]) == {"demo"}
    assert set(samples["plateau_sweep_peak_tokens_per_second"]) == {"demo", "rated"}


def _knee_query() -> str:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    [expr] = [t["expr"] for p in panels if p["title"] == "Last sweep: knee"
              for t in p["targets"]]
    return str(expr).replace("$host", ".*")


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[str]:
    """A real Prometheus scraping the collector (served by prometheus_client)."""
    server, thread = start_http_server(0, addr="127.0.0.1",
                                       registry=fleet_registry(_view(tmp_path)))
    try:
        with prometheus_scraping(tmp_path, server.server_port) as base:
            yield base
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_dashboards_knee_query_tells_the_axes_apart(scraped: str) -> None:
    found: list[dict[str, Any]] = []

    with httpx.Client(timeout=10) as client:

        def both() -> bool:
            found[:] = query(client, scraped, _knee_query())
            return len(found) == 2

        wait_for(both, "Prometheus to scrape both knees", 180)
    by_host = {r["metric"]["host"]: (r["metric"]["axis"], float(r["value"][1])) for r in found}
    assert by_host == {"demo": ("concurrency", 64.0), "rated": ("req/s", 4.0)}
