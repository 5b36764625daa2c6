"""Numbers that are not current say so: the first Decode line after idle is not a rate, the gen
rate ages out, and per-rank durations are not summed (issue 17, item 1)."""

from __future__ import annotations

from console.logs.assembler import parse_lines
from console.logs.metrics import MetricsSnapshot
from console.logs.scan import LogScanner
from console.logs.server_stats import IDLE_AFTER_S, StatsAggregator


def _decode(ts: str, running: int, gen: float) -> str:
    return (f"[2026-02-19 {ts} TP0] Decode batch, #running-req: {running}, #token: 900, "
            f"token usage: 0.10, cuda graph: True, gen throughput (token/s): {gen:.2f}, "
            "#queue-req: 0")


def _prefill(ts: str, running: int) -> str:
    return (f"[2026-02-19 {ts} TP0] Prefill batch, #new-seq: 8, #new-token: 2048, "
            f"#cached-token: 0, token usage: 0.01, #running-req: {running}, #queue-req: 0, "
            "#pending-token: 0, cuda graph: True, input throughput (token/s): 31544.71")


# A burst, a minute of idle, then a new burst whose first Decode line divides stale tokens by
# a window that restarted on wake (the simulator's "91k tok/s" spike).
BURSTS = [
    _prefill("05:00:00", 0), _decode("05:00:01", 8, 700.0), _decode("05:00:02", 8, 2385.0),
    _decode("05:00:03", 8, 2390.0),
    _prefill("05:01:10", 0), _decode("05:01:10", 8, 91164.0), _decode("05:01:11", 8, 2400.0),
]


def test_first_decode_line_after_idle_is_not_a_rate() -> None:
    aggregator = StatsAggregator()
    aggregator.add_events(parse_lines(BURSTS))
    stats = aggregator.snapshot()
    assert 91164.0 not in stats.gen_history
    # The stream's first Decode line is a rate (real tokens over real time; a log cut from a
    # busy server often has its peak there: issue 23).
    assert stats.gen_history == (700.0, 2385.0, 2390.0, 2400.0)
    assert stats.gen_throughput == 2400.0


def test_busy_prefill_and_short_gaps_keep_rates() -> None:
    lines = [_prefill("05:00:00", 0), _decode("05:00:01", 8, 1.0), _decode("05:00:02", 8, 500.0),
             _prefill("05:00:04", 8), _decode("05:00:05", 16, 900.0)]
    aggregator = StatsAggregator()
    aggregator.add_events(parse_lines(lines))
    assert aggregator.snapshot().gen_history == (1.0, 500.0, 900.0)


def test_gen_rate_ages_out_and_says_so() -> None:
    now = [100.0]
    aggregator = StatsAggregator(clock=lambda: now[0])
    aggregator.add_events(parse_lines(BURSTS[:4]))
    assert aggregator.expire() is False
    assert aggregator.snapshot().gen_throughput == 2390.0
    now[0] += IDLE_AFTER_S + 1
    assert aggregator.expire() is True
    stats = aggregator.snapshot()
    assert stats.gen_idle and stats.gen_throughput is None and stats.gen_last == 2390.0
    assert aggregator.expire() is False  # once
    aggregator.add_events(parse_lines(BURSTS[4:]))
    fresh = aggregator.snapshot()
    assert not fresh.gen_idle and fresh.gen_throughput == 2400.0


def test_metrics_gauge_is_not_a_rate_when_nothing_runs() -> None:
    aggregator = StatsAggregator()
    aggregator.add_metrics(MetricsSnapshot(gen_throughput=2385.0, running_reqs=64.0))
    aggregator.add_metrics(MetricsSnapshot(gen_throughput=2385.0, running_reqs=0.0))
    stats = aggregator.snapshot()
    assert stats.gen_idle and stats.gen_throughput is None
    assert stats.gen_last == 2385.0 and stats.gen_history == (2385.0, 0.0)
    aggregator.add_metrics(MetricsSnapshot(gen_throughput=1800.0, running_reqs=32.0))
    assert aggregator.snapshot().gen_throughput == 1800.0


def test_logscan_peak_ignores_the_line_after_idle() -> None:
    scanner = LogScanner("bursts")
    scanner.feed(parse_lines(BURSTS))
    batches = scanner.report().batches
    assert batches.peak_gen_throughput == 2400.0
    assert batches.decode_lines == 5 and batches.decode_lines_not_rate == 1


def test_logscan_does_not_sum_cuda_graph_capture_over_ranks() -> None:
    lines = ["[2026-02-19 05:00:00] server_args=ServerArgs(model_path='m', tp_size=8)"]
    for rank in range(8):
        lines.append(f"[2026-02-19 05:00:01 TP{rank}] Capture target decode CUDA graph begin. "
                     "avail mem=20.00 GB")
    for rank in range(8):
        lines.append(f"[2026-02-19 05:00:02 TP{rank}] Capture target decode CUDA graph end. "
                     f"elapsed=1.{rank}0 s, mem usage=0.50 GB, avail mem=19.50 GB.")
    lines.append("[2026-02-19 05:00:02 TP0] Capture target prefill CUDA graph end. "
                 "elapsed=0.50 s, mem usage=0.10 GB, avail mem=19.40 GB.")
    scanner = LogScanner("ranks")
    scanner.feed(parse_lines(lines))
    [launch] = scanner.report().launches
    phases = {p.name: p.seconds for p in launch.phases}
    # The slowest rank (TP7: 1.70 s), not the 8 ranks summed (9.60 s).
    assert phases["CUDA graph capture"] == 1.7


async def test_strip_says_idle_instead_of_an_old_rate() -> None:
    from textual.app import App, ComposeResult

    from console.logs.stats_snapshot import ServerStats
    from widgets.server_strip import ServerStrip

    class StripApp(App[None]):
        def compose(self) -> ComposeResult:
            yield ServerStrip()

    app = StripApp()
    async with app.run_test(size=(80, 8)) as pilot:
        strip = app.query_one(ServerStrip)
        strip.update_stats(ServerStats(source="log", gen_throughput=2385.0, version=1))
        await pilot.pause()
        assert "gen 2385 tok/s" in strip.label("gen")
        strip.update_stats(ServerStats(source="log", gen_idle=True, gen_last=2385.0, version=2))
        await pilot.pause()
        label = strip.label("gen")
        assert label == "gen idle, was 2385"
