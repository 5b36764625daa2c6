"""A sweep run with --request-rate has its peak and knee on the rate axis: the fleet summary
says so and the exporter puts them in `plateau_sweep_*_request_rate`, apart from the
concurrency gauges, read back from real SQLite, the OpenMetrics text and a real Prometheus
running the Grafana dashboard's knee query."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import start_http_server
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

from console.bench.models import RunMeta, StepMetrics, StepResult
from console.fleet.history import HistoryReader
from console.fleet.metrics import FleetCollector, FleetView, HostView
from console.fleet.summary import summarize
from console.store.db import RunStore
from tests.support.cli_hosts import wait_for
from tests.support.fleet_fixtures import GRAPH_LINE, T0, host_state
from tests.support.report_fixtures import reference_run
from tests.support.sim_fixtures import free_port
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


def _registry(view: FleetView) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(lambda: view))
    return registry


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
    text = openmetrics(_registry(_view(tmp_path))).decode()
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
    binary = shutil.which("prometheus")
    assert binary, "prometheus (Debian package prometheus, installed by .ci/run) is missing"
    server, thread = start_http_server(0, addr="127.0.0.1", registry=_registry(_view(tmp_path)))
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: plateau\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{server.server_port}']\n")
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
        server.shutdown()
        thread.join(timeout=10)


def _query(base: str, expr: str) -> list[dict[str, Any]]:
    try:
        body = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10).json()
    except httpx.TransportError:
        return []  # Prometheus is still starting
    assert body["status"] == "success", (expr, body)
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_dashboards_knee_query_tells_the_axes_apart(scraped: str) -> None:
    found: list[dict[str, Any]] = []

    def both() -> bool:
        found[:] = _query(scraped, _knee_query())
        return len(found) == 2

    wait_for(both, "Prometheus to scrape both knees", 180)
    by_host = {r["metric"]["host"]: (r["metric"]["axis"], float(r["value"][1])) for r in found}
    assert by_host == {"demo": ("concurrency", 64.0), "rated": ("req/s", 4.0)}
