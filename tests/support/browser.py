"""Headless Chromium from the distribution's package (`apt-get install chromium`, see
.ci/run), driven by Playwright for Python pointed at it: no browser download."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("PLATEAU_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    path = chromium_path()
    if path is None:  # a real browser is part of the suite: never a silent skip
        pytest.fail("chromium is not installed: `apt-get install chromium` (.ci/run does)")
    import playwright.sync_api as playwright_api  # a test extra
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
