"""Long log lines: `w` wraps them onto the next rows, left/right scroll them sideways
(issue 17, item 5)."""

from __future__ import annotations

from console.logs.assembler import parse_lines
from tests.support.logs_fixtures import LogTestApp
from widgets.log_lines import LogLines
from widgets.log_view import LogView

LONG = "[2026-02-19 05:00:00] " + " ".join(f"word{i:03d}" for i in range(60)) + " END"


def _rows(app: LogTestApp) -> list[str]:
    lines = app.query_one(LogLines)
    return [lines.render_line(y).text.rstrip() for y in range(lines.size.height)]


async def test_wrap_and_sideways_scroll() -> None:
    app = LogTestApp()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(LogView)
        view.append_events(parse_lines(["[2026-02-19 04:59:59] short", LONG]))
        view.query_one(LogLines).focus()
        await pilot.pause()
        rows = [r for r in _rows(app) if r]
        assert rows[-1].endswith("…") and "END" not in "".join(rows)  # cut, says so
        await pilot.press("right", "right")
        await pilot.pause()
        assert view.lines.scroll_x > 0
        assert "← col" in str(view.query_one("#log-status").render())
        await pilot.press("w")
        await pilot.pause()
        rows = [r for r in _rows(app) if r]
        joined = " ".join(rows)
        assert view.lines.scroll_x == 0 and "wrap" in str(view.query_one("#log-status").render())
        assert "word000" in joined and joined.endswith("END")  # the whole line, on 6 rows
        assert len(rows) >= 1 + len(LONG) // 80 and all(len(r) <= 80 for r in rows)
        await pilot.press("w")
        await pilot.pause()
        assert [r for r in _rows(app) if r][-1].endswith("…")
