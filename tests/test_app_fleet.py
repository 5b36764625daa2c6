"""The fleet overview: snapshots at 80x24 and 120x40, and its keys: sort, filter, enter opens
the host's dashboard, `F` from anywhere; rows follow the hosts' news; the first screen with
two or more hosts."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from rich.text import Text
from textual.strip import Strip

from console.session.events import ConnectionChanged, ServerUpdate
from tests.support.app_fixtures import FIXED_NOW
from tests.support.fleet_app import fleet_app, stats
from tests.support.fleet_fixtures import GRAPH_LINE
from widgets.fleet_table import FleetTable


async def _settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause(0.4)  # the coalesced redraw after the sessions' start
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_fleet_snapshot(snap_compare: Any, app_factory: Any, size: tuple[int, int]) -> None:
    assert snap_compare(fleet_app(), terminal_size=size, run_before=_settle)


def test_fleet_snapshot_filtered_light(snap_compare: Any, app_factory: Any) -> None:
    async def filtered(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("slash", *"down", "enter")
        await pilot.pause()

    app = fleet_app()
    app.theme = "plateau-light"
    assert snap_compare(app, terminal_size=(120, 40), run_before=filtered)


def _rows(app: Any) -> list[list[str]]:
    table = app.screen.query_one(FleetTable)
    return [[cell.plain for cell in table.cells_at(i)] for i in range(table.row_count)]


def _hosts(app: Any) -> list[str]:
    return [row[0].split(" ", 1)[1] for row in _rows(app)]


async def test_rows_say_what_each_host_is(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(160, 40)) as pilot:
        await _settle(pilot)
        rows = {row[0].split(" ", 1)[1]: row for row in _rows(app)}
        a1, a2 = rows["gpu-a1"], rows["gpu-a2"]
        # host, state, alerts, GPUs, gen tok/s, run/queue, KV, graph, power, memory, ...
        assert a1[1:8] == ["ready 41m", "throttle", "8x 68/99%", "5.3k", "96/0", "0.12", "on"]
        assert a1[13:15] == ["2.4k@64", "still rising"]
        assert a2[2] == "xid eager +2"  # errors first, then what fits 18 cells
        await pilot.press("down")
        detail = str(app.screen.query_one("#fleet-detail").render())
        assert detail.startswith("gpu-a2: ") and all(
            words in detail for words in ("eagerly", "KV pool full", "throttled", "3 XID"))
        assert a2[4:8] == ["4.1k", "160/37", "0.97", "off"] and a2[10] == "thr 0 xid 3"
        assert rows["gpu-b1"][1:3] == ["stopped", "down"]
        assert rows["gpu-b2"][1:3] == ["failed", "unreachable"]
        assert rows["gpu-c1"][1:3] == ["connecting", "-"]
        title = str(app.screen.query_one("#fleet-title").render())
        assert "6 hosts" in title and "4 with alerts" in title and "1 unreachable" in title


async def test_sort_filter_and_open(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert _hosts(app) == ["gpu-a1", "gpu-a2", "gpu-b1", "gpu-b2", "gpu-c1",
                               "h200-rack7-node3"]
        await pilot.press("o")  # errors (most alerts first), warnings, no data yet, healthy
        assert _hosts(app) == ["gpu-a2", "gpu-b1", "gpu-b2", "gpu-a1", "gpu-c1",
                               "h200-rack7-node3"]
        await pilot.press("o")  # gen tok/s, highest first
        assert _hosts(app)[:2] == ["gpu-a1", "gpu-a2"]
        await pilot.press("O")
        assert _hosts(app)[-2:] == ["gpu-a2", "gpu-a1"]
        await pilot.press("slash", *"eager")
        assert _hosts(app) == ["gpu-a2"]
        await pilot.press("escape")  # clears the filter
        assert len(_hosts(app)) == 6
        await pilot.press("slash", *"rack7", "enter", "enter")
        await pilot.pause()
        assert app.active_host == "h200-rack7-node3"
        assert app.current_mode == "dashboard"
        await pilot.press("F")
        await pilot.pause()
        assert app.current_mode == "fleet"


async def test_rows_follow_the_hosts_news(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        assert _rows(app)[4][1] == "connecting"
        session = app.sessions["gpu-c1"]
        session.feed(ConnectionChanged("gpu-c1", "connected"))
        session.feed(ServerUpdate("gpu-c1", "ready", version="0.5.23", profile="tp2",
                                  since=FIXED_NOW - timedelta(minutes=5)))
        session.feed(stats("gpu-c1", GRAPH_LINE))
        await _settle(pilot)
        row = _rows(app)[4]
        assert row[1] == "ready 5m" and row[4] == "5.3k" and row[0].startswith("●")


async def test_f_opens_the_fleet_from_a_dashboard(app_factory: Any) -> None:
    app = fleet_app(screen="dashboard")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("F")
        await _settle(pilot)
        assert app.current_mode == "fleet" and len(_rows(app)) == 6
        await pilot.press("escape")
        await pilot.pause()
        assert app.current_mode == "dashboard"


def test_first_screen_is_the_fleet_with_two_hosts() -> None:
    from console.app.launch import Launch, _make_app
    from tests.support.app_fixtures import app_config

    def start(hosts: list[str], host: str | None = None) -> str:
        loaded = app_config(hosts)
        stub = {"share_profiles": lambda _self, _profiles: None}  # the Session protocol's
        sessions: Any = [type("S", (), {"host": h, **stub})() for h in loaded.config.hosts]
        app = _make_app(Launch(loaded, host=host), sessions, hosts[0])
        return str(app.start_screen)

    assert start(["a", "b"]) == "fleet"
    assert start(["a"]) == "dashboard"
    assert start(["a", "b"], host="b") == "dashboard"  # a host named: its dashboard


async def test_hosts_off_screen_are_paced_down(app_factory: Any) -> None:
    """The fleet's rows on screen sample at the full rate; scrolled away or behind another
    screen, at ui.offscreen_interval_s (HostSession.pace)."""
    from console.config_models import HostConfig, PlateauConfig, UiConfig
    from console.session.service import METRICS_PERIOD_S, METRICS_ROW_PERIOD_S, HostSession

    hosts = [f"h{i:02d}" for i in range(30)]
    app = fleet_app(hosts)
    paces: dict[str, list[tuple[bool, bool]]] = {name: [] for name in hosts}
    for name, session in app.sessions.items():
        def record(on_screen: bool, in_detail: bool = True, name: str = name) -> None:
            paces[name].append((on_screen, in_detail))
        session.set_pace = record
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        on_screen = app.on_screen_hosts
        table = app.screen.query_one(FleetTable)
        assert 5 < len(on_screen) < 30 and on_screen == set(table.rows_in_view())
        assert hosts[0] in on_screen and hosts[-1] not in on_screen
        assert paces[hosts[0]][-1] == (True, False)  # on screen, as a row only
        await pilot.press("pagedown", "pagedown")  # the cursor to the last rows: it scrolls
        await _settle(pilot)
        assert hosts[-1] in app.on_screen_hosts and hosts[0] not in app.on_screen_hosts
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == "dashboard" and app.active_host in hosts[-10:]
        await pilot.pause(1.2)  # the fleet's own refresh, behind the dashboard, changes nothing
        assert app.on_screen_hosts == {app.active_host}
        assert paces[app.active_host][-1] == (True, True)  # its own dashboard
    config = PlateauConfig(hosts=[HostConfig(name="x", local=True)],
                           ui=UiConfig(gpu_interval_s=0.5, offscreen_interval_s=4.0))
    session = HostSession(config.hosts[0], config)
    assert session.pace == 1.0
    session.set_pace(False)
    assert session.pace == 8.0  # 4 s between samples instead of 0.5 s
    assert session.metrics_period == METRICS_PERIOD_S * 8
    session.set_pace(True, in_detail=False)  # a fleet row: its log lines keep it live
    assert session.pace == 1.0 and session.metrics_period == METRICS_ROW_PERIOD_S
    session.set_pace(True)
    assert session.metrics_period == METRICS_PERIOD_S


async def test_a_hosts_news_redraws_its_row_alone(app_factory: Any) -> None:
    """The table renders a row again only when its cells changed: one host's news costs one
    row, not the table (a DataTable re-rendered every cell on any update)."""
    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        table: FleetTable = app.screen.query_one(FleetTable)
        rendered: list[str] = []
        original = table._line

        def counting(row: tuple[Text, ...]) -> Strip:
            rendered.append(row[0].plain)
            return original(row)

        table._line = counting  # type: ignore[method-assign]
        session = app.sessions["gpu-c1"]
        session.feed(ConnectionChanged("gpu-c1", "connected"))
        await _settle(pilot)
        assert [row.split(" ", 1)[1] for row in rendered] == ["gpu-c1"]
        assert _rows(app)[4][1] != "connecting"
        rendered.clear()
        await pilot.pause(1.2)  # the screen's own refresh: nothing changed, nothing rendered
        assert rendered == []


async def test_a_click_moves_the_cursor_and_a_second_opens_the_host(app_factory: Any) -> None:
    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        table = app.screen.query_one(FleetTable)
        await pilot.click(FleetTable, offset=(4, 3))  # the header, then rows 0, 1, 2
        assert table.cursor_row == 2 and table.selected_host() == "gpu-b1"
        detail = str(app.screen.query_one("#fleet-detail").render())
        assert detail.startswith("gpu-b1: ")
        await pilot.click(FleetTable, offset=(4, 3))
        await pilot.pause()
        assert app.current_mode == "dashboard" and app.active_host == "gpu-b1"


async def test_rows_without_news_are_not_summarised_again(
        app_factory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh summarises only the hosts whose state changed (or whose uptime and sample
    age moved a step): 64 rows were summarised at every redraw."""
    from console.app.screens import fleet
    from console.fleet.summary import summarize

    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _settle(pilot)
        summarised: list[str] = []
        original = summarize

        def counting(state: Any, now: Any, **kwargs: Any) -> Any:
            summarised.append(state.host)
            return original(state, now, **kwargs)

        monkeypatch.setattr(fleet, "summarize", counting)
        app.sessions["gpu-c1"].feed(ConnectionChanged("gpu-c1", "connected"))
        await _settle(pilot)
        await pilot.pause(1.2)  # and the once-a-second redraw
        assert summarised and set(summarised) == {"gpu-c1"}
