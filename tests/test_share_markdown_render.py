"""`plateau report --md` rendered as a reader sees it: markdown-it with GitHub's extensions
(tables, inline HTML, bare-URL autolinks), then opened in headless Chromium, while a loopback
witness server waits for the request a hostile link or image would make. Every host-written
field (server version, profile, flag values, env values, log lines) carries a Markdown link,
an image, an autolink, a bare URL and raw HTML pointing at the witness: none may become an
element or a fetch, and the text must still read as the host wrote it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from console.cli import main
from console.store.db import RunStore
from tests.support.browser import browser
from tests.support.report_fixtures import store_run

__all__ = ["browser"]


class _Witness(http.server.ThreadingHTTPServer):
    requests: list[str]


class _Record(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, _Witness)
        self.server.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # the suite's output stays quiet
        pass


@pytest.fixture
def witness() -> Iterator[_Witness]:
    server = _Witness(("127.0.0.1", 0), _Record)
    server.requests = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _hostile(url: str) -> list[str]:
    return [f"![i]({url}/image.png)", f"[l]({url}/link)", f"<{url}/autolink>", f"{url}/bare",
            f'<img src="{url}/html.png">', f"[r][1]\n\n[1]: {url}/reference",
            "www.example.invalid/fuzzy", f"<a href='{url}/a'>a</a>"]


def _report(tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]) -> str:
    db = tmp_path / "runs.db"
    field = " ".join(_hostile(url))
    with RunStore(db) as store:
        a = store_run(store, profile=f"a {field}", version=field,
                      flags={"tp": 8, "chat-template": f"a {field}"}, failed_log=[field],
                      env={"X": field})
        b = store_run(store, profile=f"b {field}", version=field, started=1_767_700_000.0,
                      flags={"tp": 8, "chat-template": f"b {field}"})
        store.save_pair(a, b, {"interleaved": True})
    capsys.readouterr()
    assert main(["report", str(a), str(b), "--md", "--db", str(db)]) == 0
    return capsys.readouterr().out


def test_hostile_markdown_renders_no_link_image_or_html_and_fetches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], browser: Any, witness: _Witness
) -> None:
    url = f"http://127.0.0.1:{witness.server_address[1]}"
    text = _report(tmp_path, url, capsys)
    html = MarkdownIt("gfm-like").render(text)
    page = browser.new_page()
    try:
        page.set_content(f"<!doctype html><html><body>{html}</body></html>",
                         wait_until="networkidle")
        elements = page.eval_on_selector_all("a, img, script, iframe, object, embed",
                                             "nodes => nodes.map(n => n.outerHTML)")
        shown = page.inner_text("body")
    finally:
        page.close()
    assert elements == [], elements
    assert witness.requests == [], witness.requests
    # Nothing lost: each form reads as written (a newline shows as its control picture).
    for form in _hostile(url):
        assert shown.count(form.replace("\n", "\u240a")) >= 6, form  # 2 titles, 2 versions...
