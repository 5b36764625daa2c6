"""With `ui.ascii` the server strip draws no block or symbol glyphs (terminals without them)."""

from __future__ import annotations

import html
import re

import pytest
from textual.app import App, ComposeResult

from console.logs.stats_snapshot import ServerStats
from widgets.server_strip import ServerStrip

STATS = ServerStats(
    source="log", gen_throughput=5321.0, running_reqs=96, queue_reqs=0, token_usage=0.12,
    cuda_graph=True, gen_history=(10.0, 900.0, 4000.0, 5321.0),
    running_history=(1.0, 20.0, 64.0, 96.0), queue_history=(0.0, 3.0, 0.0, 0.0),
    usage_history=(0.01, 0.05, 0.1, 0.12), cuda_graph_history=(True, False, True),
    version=3,
)


class StripApp(App[None]):
    def __init__(self, ascii_only: bool) -> None:
        super().__init__()
        self.ascii_only = ascii_only

    def compose(self) -> ComposeResult:
        strip = ServerStrip(ascii_only=self.ascii_only)
        strip.add_class("-tall-2")  # multi-row sparklines draw extra full-block rows
        yield strip

    def on_mount(self) -> None:
        self.query_one(ServerStrip).update_stats(STATS)


@pytest.mark.parametrize("ascii_only", [True, False])
async def test_ascii_strip_has_no_block_glyphs(ascii_only: bool) -> None:
    app = StripApp(ascii_only)
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        svg = app.export_screenshot()
    # the screen's text, in order (the SVG splits it into one element per style run)
    screen = "".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    screen = screen.replace("\xa0", " ")
    fancy = [glyph for glyph in "▁▂▃▄▅▆▇█✓✗▮▯" if glyph in screen]
    if ascii_only:
        assert fancy == []
        assert "gen 5321 tok/s" in screen and "cuda graph on" in screen
    else:
        assert fancy  # the same data draws block glyphs without ASCII mode


async def test_ascii_strip_without_data_has_no_block_glyphs() -> None:
    """Before the first batch line Textual draws a hard-coded row of "▁": ASCII mode too."""

    class EmptyApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ServerStrip(ascii_only=True)

    app = EmptyApp()
    async with app.run_test(size=(80, 12)) as pilot:
        await pilot.pause()
        svg = app.export_screenshot()
    screen = "".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert "▁" not in screen and "gen n/a tok/s" in screen.replace("\xa0", " ")
