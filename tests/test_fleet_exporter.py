"""The exporter's exposition: parsed back with prometheus_client's own OpenMetrics parser, it
says what the summaries say; promtool accepts it; and a host that hangs or refuses never holds
a scrape (real SSH sessions against a silent and a closed loopback port)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.exposition import generate_latest as text_format
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from console.cli import main
from console.commands.exporter import listen_address
from console.config_models import HostConfig, PlateauConfig
from console.fleet.exporter import Fleet, serve
from console.fleet.history import HistoryReader
from console.fleet.metrics import ALERT_IDS, FleetView, HostView, ObserverCost
from console.fleet.summary import host_up, summarize
from console.session.events import ConnectionChanged
from console.session.service import HostSession
from tests.support.fleet_fixtures import EAGER_FULL_LINE, GRAPH_LINE, T0, gpu, host_state
from tests.support.prometheus_run import fleet_registry
from tests.support.report_fixtures import ab_pair, reference_run

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = float(s.value)
    return out


def _get(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def _view(tmp_path: Path) -> FleetView:
    """A busy host (eager decode, full KV pool, a throttled GPU, an XID), the history of
    host "demo" (a stored sweep and an A/B pair in real SQLite) and a host that dropped."""
    db = tmp_path / "history.sqlite3"
    reference_run(db)
    ab_pair(db)
    known = HistoryReader(db).read(["demo"])["demo"]
    busy = host_state(GRAPH_LINE, EAGER_FULL_LINE, name="demo",
                      gpus=[gpu(0, clock_reasons=["hw slowdown"]), gpu(1, xid_count=3)])
    dropped = host_state(GRAPH_LINE, name="gone")
    dropped.apply(ConnectionChanged("gone", "lost", "connection reset"))
    hosts = []
    for state, ab, last in ((busy, known.ab, known.last_run), (dropped, None, None)):
        summary = summarize(state, T0, last_run=last)
        up, reason = host_up(summary, 10.0)
        cost = ObserverCost({"gpu_sample": 7, "log_event": 40}, 0.25, 0.003)
        hosts.append(HostView(summary, up, reason, ab, cost))
    return FleetView(hosts, cpu_s=1.5)


def test_the_exposition_says_what_the_summaries_say(tmp_path: Path) -> None:
    view = _view(tmp_path)
    samples = _samples(openmetrics(fleet_registry(view)).decode())
    busy, gone = view.hosts
    s = busy.summary
    assert _get(samples, "plateau_host_up", host="demo") == 1.0
    assert _get(samples, "plateau_host_up", host="gone") == 0.0
    assert _get(samples, "plateau_host_info", host="gone", connection="lost",
                reason="lost: connection reset") == 1.0
    assert s.gpus is not None
    for line in s.gpus.gpus:
        key = {"host": "demo", "gpu": str(line.index)}
        assert line.util_pct is not None and line.power_w is not None
        assert _get(samples, "plateau_gpu_utilization_ratio", **key) == line.util_pct / 100
        assert _get(samples, "plateau_gpu_power_watts", **key) == line.power_w
        assert line.mem_used_mib is not None
        assert _get(samples, "plateau_gpu_memory_used_bytes", **key) == line.mem_used_mib * 2**20
    assert _get(samples, "plateau_gpu_throttle_reason", host="demo", gpu="0",
                reason="hw slowdown") == 1.0
    assert _get(samples, "plateau_gpu_xid_errors_total", host="demo", gpu="1") == 3.0
    assert _get(samples, "plateau_gpu_sample_age_seconds", host="demo") == s.gpus.age_s
    load = s.load
    assert load is not None
    assert _get(samples, "plateau_server_generation_tokens_per_second",
                host="demo") == load.gen_tok_s == 4100.5
    assert _get(samples, "plateau_server_running_requests", host="demo") == load.running == 160
    assert _get(samples, "plateau_server_kv_cache_usage_ratio", host="demo") == 0.97
    assert _get(samples, "plateau_server_cuda_graph", host="demo") == 0.0
    assert _get(samples, "plateau_server_uptime_seconds", host="demo") == s.server.uptime_s
    assert _get(samples, "plateau_server_info", host="demo", state="ready", version="0.5.23",
                profile="tp2") == 1.0
    on = {a.id for a in s.alerts}
    assert on == {"eager-decode", "kv-pool-full", "gpu-throttled", "gpu-xid"}
    for alert in ALERT_IDS:
        assert _get(samples, "plateau_alert_active", host="demo", alert=alert) == (alert in on)
    assert _get(samples, "plateau_alert_active", host="gone", alert="host-unreachable") == 1.0
    sweep = s.sweep
    assert sweep is not None and sweep.run_id is not None and sweep.peak_tok_s is not None
    run = sweep.run_id
    assert _get(samples, "plateau_sweep_peak_tokens_per_second", host="demo",
                run=run) == sweep.peak_tok_s
    assert _get(samples, "plateau_sweep_knee_concurrency", host="demo", run=run,
                kind=sweep.knee_kind or "") == sweep.knee_concurrency
    assert sweep.causes, "the stored reference run has a diagnosed cause"
    assert _get(samples, "plateau_sweep_cause_info", host="demo", run=run, rank="1",
                cause=sweep.causes[0]) == 1.0
    ab = busy.ab
    assert ab is not None and ab.knee_delta_pct is not None
    pair = str(ab.pair_id)
    assert _get(samples, "plateau_ab_knee_delta_ratio", host="demo",
                pair=pair) == ab.knee_delta_pct / 100
    assert _get(samples, "plateau_ab_info", host="demo", pair=pair, a=ab.name_a, b=ab.name_b,
                verdict=ab.word, metric=ab.metric, run_a=str(ab.run_a),
                run_b=str(ab.run_b)) == 1.0
    assert _get(samples, "plateau_observer_events_total", host="demo", kind="gpu_sample") == 7
    assert _get(samples, "plateau_gpu_agent_cpu_seconds_total", host="demo") == 0.25
    assert _get(samples, "plateau_exporter_cpu_seconds_total") == 1.5
    # What is known of a dropped host is still said, beside its plateau_host_up 0.
    assert gone.summary.load is not None
    assert _get(samples, "plateau_server_running_requests", host="gone") == 64


def test_promtool_accepts_the_exposition(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian package prometheus, installed by .ci/run) is missing"
    text = text_format(fleet_registry(_view(tmp_path)))
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    assert done.stdout.decode().strip() == "" and done.stderr.decode().strip() == ""


@pytest.fixture
def silent_port() -> Iterator[tuple[int, socket.socket]]:
    """A loopback port that accepts a connection and never says a word (a hung sshd)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        yield listener.getsockname()[1], listener


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


async def test_a_hung_and_a_refused_host_do_not_hold_the_scrape(
    tmp_path: Path, silent_port: tuple[int, socket.socket]
) -> None:
    port, listener = silent_port
    hosts = [HostConfig(name="stuck", address="127.0.0.1", port=port, user="nobody",
                        known_hosts_file=str(tmp_path / "known_hosts")),
             HostConfig(name="gone", address="127.0.0.1", port=_closed_port(), user="nobody",
                        known_hosts_file=str(tmp_path / "known_hosts"))]
    config = PlateauConfig(hosts=hosts)
    sessions = [HostSession(h, config) for h in hosts]
    fleet = Fleet(sessions, history=HistoryReader(tmp_path / "none.sqlite3"))
    runner, bound = await serve(fleet, "127.0.0.1", 0)
    try:
        await fleet.start()
        loop = asyncio.get_running_loop()
        listener.settimeout(30)
        accepted, _ = await loop.run_in_executor(None, listener.accept)  # stuck mid-handshake
        async with asyncio.timeout(30):
            while sessions[1].state.connection != "failed":
                await asyncio.sleep(0.05)
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{bound}/metrics", headers={
                "Accept": "application/openmetrics-text; version=1.0.0"})
        samples = _samples(response.text)
        # Answered while the hung host is still connecting: the scrape did not wait for it.
        assert sessions[0].state.connection == "connecting"
        assert response.headers["content-type"].startswith("application/openmetrics-text")
        assert _get(samples, "plateau_host_up", host="stuck") == 0.0
        assert _get(samples, "plateau_host_up", host="gone") == 0.0
        reasons = {labels["host"]: labels["reason"]
                   for f in text_string_to_metric_families(response.text)
                   if f.name == "plateau_host" for labels in (s.labels for s in f.samples)}
        assert reasons["stuck"] == "connecting"
        assert reasons["gone"].startswith("failed: ")
        assert _get(samples, "plateau_alert_active", host="gone", alert="host-unreachable") == 1
        accepted.close()
    finally:
        await fleet.close()
        await runner.cleanup()


def test_a_fresh_sample_is_up_and_an_old_one_is_a_hang() -> None:
    state = host_state(GRAPH_LINE)
    assert host_up(summarize(state, T0), 10.0) == (True, "")
    later = summarize(state, T0 + timedelta(seconds=40))
    assert host_up(later, 10.0) == (False, "connected, but no GPU sample for 42 s")


async def test_a_failed_host_is_tried_again(tmp_path: Path) -> None:
    host = HostConfig(name="gone", address="127.0.0.1", port=_closed_port(), user="nobody",
                      known_hosts_file=str(tmp_path / "known_hosts"))
    session = HostSession(host, PlateauConfig(hosts=[host]))
    fleet = Fleet([session], retry_after_s=0.05)
    await fleet.start()
    try:
        async with asyncio.timeout(60):
            while fleet.view().hosts[0].cost.events.get("connection", 0) < 6:
                await asyncio.sleep(0.05)  # connecting, failed: three attempts at least
    finally:
        await fleet.close()
    attempts = [e for e in session.state.events if e.source == "connection"]
    assert sum(1 for e in attempts if e.message.startswith("failed")) >= 3


def test_listen_address_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert listen_address("127.0.0.1:9464") == ("127.0.0.1", 9464)
    assert listen_address("[::1]:0") == ("::1", 0)
    assert main(["exporter", "--listen", "9464"]) == 2
    assert "expected HOST:PORT" in capsys.readouterr().err
    assert main(["exporter", "--demo", "box"]) == 2
    assert capsys.readouterr().err == "plateau: give HOSTs or --demo, not both\n"
