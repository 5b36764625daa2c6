"""LogView and ServerStrip through Pilot and snapshots: hostile text stays literal, filter hides,
search moves, follow/pause counts new lines, detail explains, copy uses OSC 52."""

from __future__ import annotations

import re
from typing import Any

from textual.pilot import Pilot

from console.logs.assembler import parse_lines
from console.logs.server_stats import StatsAggregator
from console.logs.stats_snapshot import ServerStats
from tests.support.logs_fixtures import HOSTILE_LINES, SAMPLE_LOG, LogTestApp, sample_events
from tests.support.snapshot import SnapCompare
from widgets.log_lines import LogLines
from widgets.log_view import LogView
from widgets.server_strip import ServerStrip


def rendered(app: LogTestApp) -> list[str]:
    lines = app.query_one(LogLines)
    return [lines.render_line(y).text for y in range(lines.size.height)]


async def test_hostile_lines_render_literally_and_never_reach_the_terminal() -> None:
    app = LogTestApp()
    big = "[2026-02-19 05:22:16] " + "z" * (1 << 20)
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(LogView)
        view.append_events(parse_lines([*HOSTILE_LINES, big]))
        await pilot.pause()
        text = "\n".join(rendered(app))
        assert "[bold]not bold[/bold] and [red]not red" in text
        assert "loss [/ 3 and [type=x, v={'a[0]'}] and tok[/dim]" in text
        assert "+1048576 chars" not in text  # scrolled to the end: the big line is cut
        svg = app.export_screenshot()
        assert "\x1b" not in svg and "PWNED" not in svg and "\x00" not in svg
        await pilot.press("y")
        assert app.copied[-1] == big  # the whole line, not the truncated display
        detail = view.detail_text(view.selected_event).plain
        # The detail pane shows 100k characters (100x the list's cut) and says what is left;
        # wrapping a whole megabyte in a widget would freeze the UI. `y` copies all of it.
        assert "z" * 99_000 in detail and "(+948598 chars)" in detail


async def test_filter_hides_and_search_moves() -> None:
    app = LogTestApp()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(LogView)
        view.append_events(sample_events())
        await pilot.press("l", "l", "l")  # all -> info -> warn -> error
        assert view.store.visible_count == 13
        assert all("Decode batch" not in line for line in rendered(app))
        await pilot.press("escape")
        assert view.store.visible_count == 115  # the console's own poll stays folded
        await pilot.press("slash", *"TP1", "enter")
        assert 0 < view.store.visible_count < 116
        assert all("TP1" in view.store.line(i) for i in range(view.store.visible_count))
        view.set_regex_filter("")
        await pilot.press("ctrl+f", *"fired up", "enter")
        first = view.query_one(LogLines).cursor
        assert "fired up" in view.store.line(first)
        await pilot.press("n")
        second = view.query_one(LogLines).cursor
        assert second != first and "fired up" in view.store.line(second)
        assert not view.follow  # searching pauses following
        assert view.set_regex_filter("([") is False and "bad regex" in view.message_text


async def test_follow_pause_counts_new_lines_without_yanking() -> None:
    app = LogTestApp()
    events = sample_events()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(LogView)
        lines = view.query_one(LogLines)
        view.append_events(events[:60])
        await pilot.pause()
        assert view.follow and lines.cursor == view.store.visible_count - 1
        await pilot.press("up", "up")
        assert not view.follow
        cursor, scroll = lines.cursor, lines.scroll_y
        view.append_events(events[60:])
        await pilot.pause()
        # New lines the view shows: the console's own poll (/get_server_info) is folded.
        assert view.new_lines == sum(e.line_count for e in events[60:]) - 1
        assert (lines.cursor, lines.scroll_y) == (cursor, scroll)
        status = str(view.query_one("#log-status").render())
        assert f"+{view.new_lines} new lines" in status
        await pilot.press("end")
        assert view.follow and view.new_lines == 0
        assert lines.cursor == view.store.visible_count - 1


async def test_detail_pane_explains_and_numbers_lines_as_the_status() -> None:
    """The detail explains a catalogue match. One numbering: the status line's "at line N"
    and the detail pane's "line N" are the file's line N, with the console's polls folded and
    a filter on (was "PAUSED at 1" beside "line 12" for one line: the first counted rows)."""
    file_lines = SAMPLE_LOG.read_text("utf-8").splitlines()
    app = LogTestApp()
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(LogView)
        view.append_events(sample_events())
        await pilot.press("l", "l")  # warnings and worse
        await pilot.press("home")
        await pilot.pause()
        detail = view.detail_text(view.selected_event).plain
        assert "Unauthenticated HF Hub requests" in detail and "HF_TOKEN" in detail
        cursor = view.query_one(LogLines).cursor
        status = str(view.query_one("#log-status").render())
        found = re.search(r"PAUSED  at line (\d+) ", status)
        assert found is not None, status
        at = int(found.group(1))
        assert at > cursor + 1  # rows above it were filtered away: a row count would differ
        assert file_lines[at - 1] == view.store.line(cursor)
        head = detail.splitlines()[0]
        assert f"line {at}" in head or f"lines {at}\u2013" in head, (status, head)


async def test_store_cap_through_the_widget() -> None:
    app = LogTestApp(max_lines=200)
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(LogView)
        for chunk in range(20):
            view.append_events(parse_lines(
                [f"[2026-02-19 05:21:47] line {chunk * 50 + i}" for i in range(50)]))
        await pilot.pause()
        assert view.store.line_count <= 200
        assert rendered(app)[-1].rstrip().endswith("line 999")


def _stats() -> ServerStats:
    aggregator = StatsAggregator()
    aggregator.add_events(sample_events())
    return aggregator.snapshot()


def test_snapshot_log_view_with_hostile_lines(snap_compare: SnapCompare) -> None:
    async def setup(pilot: Pilot[Any]) -> None:
        app = pilot.app
        app.query_one(LogView).append_events(sample_events()[-12:] + parse_lines(HOSTILE_LINES))
        app.query_one("#strip", ServerStrip).update_stats(_stats())
        await pilot.pause()

    assert snap_compare(LogTestApp(), run_before=setup, terminal_size=(110, 36))


def test_snapshot_filtered_errors_with_detail(snap_compare: SnapCompare) -> None:
    async def setup(pilot: Pilot[Any]) -> None:
        app = pilot.app
        app.query_one(LogView).append_events(sample_events())
        app.query_one("#strip", ServerStrip).update_stats(_stats())
        await pilot.press("l", "l", "l", "home")
        await pilot.pause()

    assert snap_compare(LogTestApp(), run_before=setup, terminal_size=(110, 36))

