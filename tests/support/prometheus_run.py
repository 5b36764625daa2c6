"""A real Prometheus (Debian's package, installed by .ci/run) scraping one target, and its
HTTP query API; the fleet collector in a registry of its own."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.registry import CollectorRegistry

from console.fleet.metrics import FleetCollector, FleetView
from tests.support.sim_fixtures import free_port


def fleet_registry(view: FleetView) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(lambda: view))
    return registry


@contextmanager
def prometheus_scraping(tmp_path: Path, target_port: int) -> Iterator[str]:
    """Prometheus scraping 127.0.0.1:target_port every second; yields its base URL."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus (Debian package prometheus, installed by .ci/run) is missing"
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: plateau\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{target_port}']\n"
    )
    log = (tmp_path / "prometheus.log").open("w")
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def query(client: httpx.Client, base: str, expr: str) -> list[dict[str, Any]]:
    """An instant query's result; empty while Prometheus is still starting (not listening
    yet, or listening and answering 503 "Service Unavailable" in plain text until ready)."""
    try:
        reply = client.get(f"{base}/api/v1/query", params={"query": expr})
    except httpx.TransportError:
        return []
    if reply.status_code == httpx.codes.SERVICE_UNAVAILABLE:
        return []
    body = reply.json()
    assert body["status"] == "success", (expr, body)
    result: list[dict[str, Any]] = body["data"]["result"]
    return result
