"""`plateau report --html` in a real browser (Debian's Chromium through Playwright): the page
loads with no console error and no request, every chart has one point per level and series,
every table its rows, host-written markup stays text, and screenshots at 1280x800 and at a
phone's width are written under the test's tmp dir (kept as artifacts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from console.cli import main
from tests.support.browser import browser  # noqa: F401  (the fixture)
from tests.support.report_fixtures import (
    HOSTILE_PROFILE,
    HOSTILE_VERSION,
    REFERENCE,
    ab_pair,
    reference_run,
)

LEVELS = len(REFERENCE)
PHONE = {"width": 390, "height": 844}


def _html(tmp_path: Path, db: Path, *runs: int, name: str) -> Path:
    out = tmp_path / f"{name}.html"
    assert main(["report", *map(str, runs), "--html", str(out), "--db", str(db)]) == 0
    return out


class Loaded:
    def __init__(self, page: Any) -> None:
        self.page = page
        self.console: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []

    def points(self, chart_id: str) -> int:
        return int(self.page.locator(f"svg#{chart_id} circle.pt").count())

    def rows(self, table_id: str) -> int:
        return int(self.page.locator(f"table#{table_id} tbody tr").count())


def _open(browser: Any, path: Path, shots: Path, name: str) -> Loaded:  # noqa: F811
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = Loaded(page)
    page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    def dismiss(dialog: Any) -> None:
        seen.dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.on("request", lambda r: seen.requests.append(r.url)
            if not r.url.startswith("file://") else None)
    page.goto(path.as_uri(), wait_until="load")
    timing = page.evaluate("JSON.stringify(performance.getEntriesByType('navigation')[0])")
    shots.mkdir(exist_ok=True)
    (shots / f"{name}-timing.json").write_text(timing)
    page.screenshot(path=str(shots / f"{name}-1280x800.png"))
    page.set_viewport_size(PHONE)
    page.screenshot(path=str(shots / f"{name}-phone.png"), full_page=True)
    assert (shots / f"{name}-1280x800.png").stat().st_size > 1000
    assert json.loads(timing)["loadEventEnd"] > 0
    return seen


def _clean(seen: Loaded) -> None:
    assert seen.console == [] and seen.errors == [] and seen.dialogs == []
    assert seen.requests == []  # self-contained: nothing fetched


def test_reference_run_report_in_chromium(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "runs.db"
    run = reference_run(db)
    seen = _open(browser, _html(tmp_path, db, run, name="reference"), tmp_path / "shots",
                 "reference")
    _clean(seen)
    # total and output tok/s; p50 and p99 of TTFT and ITL: one point per level each
    for chart in ("chart-throughput", "chart-ttft", "chart-itl"):
        assert seen.points(chart) == 2 * LEVELS, chart
    assert seen.points("chart-gpu-power-0") == LEVELS
    assert seen.points("chart-gpu-util-0") == LEVELS
    assert seen.rows("levels-0") == LEVELS and seen.rows("gpu-0") == LEVELS
    assert seen.page.locator("svg.chart").count() == 5
    text = seen.page.inner_text("body")
    assert "cuda-graph-ceiling" in text and "NVIDIA H200" in text and "570.124.06" in text
    assert "Using default MoE kernel config" in seen.page.inner_text("pre.log")
    # the throughput chart's highest point is the 128 level's total tok/s
    ys = seen.page.eval_on_selector_all(
        "svg#chart-throughput g[data-series='0'] circle.pt", "els => els.map(e => e.dataset.y)")
    assert [float(y) for y in ys] == [total for _c, total in REFERENCE]


def test_ab_report_in_chromium(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "runs.db"
    a, _b = ab_pair(db)
    seen = _open(browser, _html(tmp_path, db, a, name="ab"), tmp_path / "shots", "ab")
    _clean(seen)
    assert seen.points("chart-throughput") == 2 * 2 * LEVELS  # two runs, total and output
    assert seen.points("chart-ab-0") == LEVELS
    assert seen.page.locator("svg#chart-ab-0 line.ci").count() == LEVELS  # 3 repeats a side
    assert seen.rows("verdict-0") == LEVELS
    assert seen.rows("flagdiff-0") == 1
    assert "--cuda-graph-max-bs-decode" in seen.page.inner_text("table#flagdiff-0")
    verdict = seen.page.inner_text("p.verdict")
    assert "+6.0%" in verdict and "real" in verdict, verdict
    assert seen.page.locator("section.run").count() == 2


def test_hostile_host_text_stays_text(browser: Any, tmp_path: Path) -> None:  # noqa: F811
    db = tmp_path / "runs.db"
    run = reference_run(db, hostile=True)
    seen = _open(browser, _html(tmp_path, db, run, name="hostile"), tmp_path / "shots",
                 "hostile")
    _clean(seen)  # no alert dialog, no error, no request for "x"
    page = seen.page
    assert page.locator("img").count() == 0 and page.locator("script").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    text = page.inner_text("body")
    assert HOSTILE_VERSION in text and HOSTILE_PROFILE in text
    logs = page.eval_on_selector_all("pre.log", "els => els.map(e => e.textContent)")
    assert any("<script>alert(3)</script> &" in log for log in logs), logs
    assert not any("\x1b" in log or "\x07" in log for log in logs)  # escapes made visible
    assert HOSTILE_PROFILE in page.title()
