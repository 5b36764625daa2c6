"""The console's own polls in the server log: folded by default, a toggle, a count per minute,
never graded as warnings; `server_args` is not a warning (issue 17, item 2)."""

from __future__ import annotations

from console.logs.assembler import parse_lines
from console.logs.models import Severity
from tests.support.logs_fixtures import LogTestApp
from widgets.log_view import LogView


def _access(second: int, method: str, path: str, status: str) -> str:
    return (f'[2026-02-19 05:00:{second:02d}] INFO:     127.0.0.1:5{second:04d} - '
            f'"{method} {path} HTTP/1.1" {status}')


LINES = [
    "[2026-02-19 05:00:00] server_args=ServerArgs(model_path='m', tp_size=8, "
    "enable_deterministic_inference=False, disable_fallback=False, warnings='none', "
    "deprecated_flag=None, retract_decode_steps=20)",
    _access(1, "GET", "/ready", "503 Service Unavailable"),
    _access(2, "GET", "/health", "503 Service Unavailable"),
    "[2026-02-19 05:00:03 TP0] Decode batch, #running-req: 8, #token: 900, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 2385.00, #queue-req: 0",
    *(_access(4 + i, "GET", path, "200 OK")
      for i, path in enumerate(["/metrics", "/server_info", "/ready", "/metrics"])),
    _access(9, "POST", "/generate", "200 OK"),
    _access(10, "GET", "/v1/models", "503 Service Unavailable"),
]


def test_own_polls_are_debug_and_other_5xx_still_errors() -> None:
    events = parse_lines(LINES)
    by_path = {e.message.split('"')[1]: e.severity for e in events if e.kind == "access"}
    assert by_path["GET /ready HTTP/1.1"] == Severity.DEBUG  # a 503 from /ready: an answer
    assert by_path["GET /health HTTP/1.1"] == Severity.DEBUG
    assert by_path["GET /v1/models HTTP/1.1"] == Severity.ERROR
    assert events[0].severity < Severity.WARNING  # server_args names flags, warns of nothing


async def test_own_polls_folded_with_a_toggle_and_a_count() -> None:
    app = LogTestApp()
    async with app.run_test(size=(120, 20)) as pilot:
        view = app.query_one(LogView)
        view.append_events(parse_lines(LINES))
        await pilot.pause()
        shown = [view.store.line(i) for i in range(view.store.visible_count)]
        assert len(shown) == 4 and not any("/ready" in line or "/metrics" in line
                                           for line in shown)
        status = str(app.query_one("#log-status").render())
        assert "console polls: 6/min folded (o: show)" in status
        view.query_one("#log-lines").focus()
        await pilot.press("o")
        assert view.store.visible_count == len(LINES)
        assert "6/min shown (o: fold)" in str(app.query_one("#log-status").render())
        await pilot.press("l", "escape")  # clearing the operator's filter keeps the fold
        assert view.store.visible_count == len(LINES)
