"""The exporter scraped by a real Prometheus (Debian's package, installed by .ci/run), and
every PromQL expression of the Grafana dashboard (docs/grafana/plateau.json) run through
Prometheus' HTTP API against what it scraped: each must return data.

The exporter runs as `plateau exporter --demo` (a real simulated host: GPU agent, log follower,
status poll, /metrics scrape), with a history holding a diagnosed sweep and an A/B pair of the
demo host, and load on the demo's server so its Decode lines carry the load figures.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cli_hosts import spawn_plateau, wait_for
from tests.support.prometheus_run import prometheus_scraping, query
from tests.support.report_fixtures import ab_pair, reference_run

DASHBOARD = Path(__file__).parent.parent / "docs" / "grafana" / "plateau.json"
# What Grafana puts in for its variables when the dashboard shows every host.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$host": ".*"}


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    out = []
    for expr in exprs:
        for name, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(name, value)
        assert "$" not in expr, expr
        out.append(expr)
    return out


@dataclass
class Lines:
    """A process's stderr, read by a thread as it comes."""

    seen: list[str] = field(default_factory=list)

    def find(self, pattern: str) -> re.Match[str] | None:
        return next((m for line in list(self.seen) if (m := re.search(pattern, line))), None)


def _read(stream: Any, lines: Lines) -> None:
    for line in stream:
        lines.seen.append(line)


@dataclass
class Load:
    """Streams of requests to the demo server until stopped (Decode lines need a batch)."""

    url: str
    stop: threading.Event = field(default_factory=threading.Event)
    sent: int = 0

    def run(self) -> None:
        body = {"text": "Why does throughput plateau?", "stream": False,
                "sampling_params": {"max_new_tokens": 64, "ignore_eos": True}}
        with httpx.Client(timeout=60) as client:
            while not self.stop.is_set():
                try:
                    client.post(f"{self.url}/generate", json=body)
                    self.sent += 1
                except httpx.HTTPError:
                    time.sleep(0.2)


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[tuple[int, Lines]]:
    db = tmp_path / "history.sqlite3"
    reference_run(db)  # host "demo": a sweep that saturates at 64, diagnosed
    ab_pair(db)
    process = spawn_plateau(tmp_path, "exporter", "--demo", "--seed", "3",
                            "--listen", "127.0.0.1:0", "--db", str(db))
    lines = Lines()
    threading.Thread(target=_read, args=(process.stderr, lines), daemon=True).start()
    loads: list[threading.Thread] = []
    load: Load | None = None
    try:
        wait_for(lambda: lines.find(r"demo server (http://\S+)") is not None
                 or process.poll() is not None, "the exporter to start", 120)
        serving = lines.find(r"serving http://127\.0\.0\.1:(\d+)/metrics")
        server = lines.find(r"demo server (http://\S+)")
        assert serving and server, "".join(lines.seen)
        load = Load(server.group(1))
        loads = [threading.Thread(target=load.run, daemon=True) for _ in range(8)]
        for thread in loads:
            thread.start()
        yield int(serving.group(1)), lines
    finally:
        if load is not None:  # the requests end first: a server's drain waits for them
            load.stop.set()
        for thread in loads:
            thread.join(timeout=60)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, "".join(lines.seen)
    if load is not None:  # the demo's server went with the exporter
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{load.url}/ready", timeout=5)


@pytest.fixture
def prometheus(tmp_path: Path, exporter: tuple[int, Lines]) -> Iterator[str]:
    with prometheus_scraping(tmp_path, exporter[0]) as base:
        yield base


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_every_dashboard_query_has_data_in_prometheus(prometheus: str) -> None:
    queries = dashboard_queries()
    assert len(queries) >= 20
    started = time.monotonic()
    with httpx.Client(timeout=10) as client:
        wait_for(lambda: any(float(r["value"][1]) == 1.0 for r in
                             query(client, prometheus, 'plateau_host_up{host="demo"}')),
                 "Prometheus to scrape the demo host up", 180)
        missing = list(queries)

        def all_answered() -> bool:
            missing[:] = [q for q in missing if not query(client, prometheus, q)]
            return not missing

        try:
            wait_for(all_answered, "every dashboard query to return data", 180)
        except AssertionError:
            raise AssertionError(f"no data for: {missing}") from None
        targets = client.get(f"{prometheus}/api/v1/targets").json()["data"]["activeTargets"]
        assert [t["health"] for t in targets] == ["up"], targets
        cause = query(client, prometheus, "plateau_sweep_cause_info")
        assert cause[0]["metric"]["cause"] == "cuda-graph-ceiling"
        load = query(client, prometheus, "max_over_time(plateau_server_running_requests[5m])")
        assert float(load[0]["value"][1]) >= 1
    print(f"all {len(queries)} queries answered {time.monotonic() - started:.1f} s after "
          "Prometheus started")
