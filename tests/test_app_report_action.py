"""The console's report action: `x` in the Why view writes the newest run's HTML report beside
the history database and says where (the same page as `plateau report RUN --html`)."""

from __future__ import annotations

from pathlib import Path

from console.app.app import PlateauApp
from console.session.replay import ReplaySession
from tests.support.app_fixtures import app_config, demo_events, fixed_clock
from tests.support.report_fixtures import reference_run


async def test_why_view_x_writes_the_html_report(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run = reference_run(db)
    loaded = app_config()
    host = loaded.config.hosts[0]
    session = ReplaySession.from_events(host, demo_events(host.name), clock=fixed_clock)
    app = PlateauApp(loaded, [session], clock=fixed_clock, store_path=db, tick_seconds=None)
    target = tmp_path / "reports" / f"plateau-run-{run}.html"
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.pause()
        await pilot.press("W")
        for _ in range(50):
            await pilot.pause(0.05)
            if getattr(app.screen, "run", None) is not None:
                break
        await pilot.press("x")
        for _ in range(100):
            await pilot.pause(0.05)
            if target.exists() and any("report written" in str(n.message)
                                       for n in app._notifications):
                break
    page = target.read_text(encoding="utf-8")
    assert f"run {run}: cutlass-moe" in page and 'id="chart-throughput"' in page
    assert any(str(target) in str(n.message) for n in app._notifications)
