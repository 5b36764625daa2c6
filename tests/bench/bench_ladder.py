"""Benchmark: what the CUDA-graph ladder adds to `plateau logscan`, as a ratio to the plain scan
in the same run, on the same file (the 1M-line realistic log of bench_logscan_e2e.py, or its
first --lines lines), and the ladder alone on the rows the scan read.

Three figures per repeat, interleaved so load changes hit all of them, CPU seconds
(time.process_time) in this process, the median of --repeat:

* plain: LogScanner + ScanPipeline (logscan before the ladder);
* logscan: scan_stream (the pipeline handing its rows to the ladder, then its proposal);
* ladder rows: LadderReader.feed_rows over rows read once beforehand (its own share).

Also the ladder on the largest real log of tests/data/logs/real/ (feed_text + plan), against
the plain scan of the same file.

    .venv/bin/python tests/bench/bench_ladder.py [--lines 300000] [--repeat 5]

Prints figures and ratios; nothing is asserted here.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from console.commands.logscan import scan_stream  # noqa: E402
from console.logs.assembler import EventAssembler  # noqa: E402
from console.logs.bounded_lines import bounded_text_chunks  # noqa: E402
from console.logs.ladder import LadderReader  # noqa: E402
from console.logs.ladder_plan import plan  # noqa: E402
from console.logs.scan import LogScanner  # noqa: E402
from console.logs.scan_fast import ScanPipeline  # noqa: E402
from console.logs.scan_rows import ROWS  # noqa: E402
from tests.bench.bench_logscan_e2e import write_log  # noqa: E402

REAL = ROOT / "tests" / "data" / "logs" / "real"


def plain_scan(data: bytes) -> None:
    scanner = LogScanner("bench")
    pipeline = ScanPipeline(scanner, EventAssembler(scanner.catalogue, source="bench"))
    for text in bounded_text_chunks(io.BytesIO(data)):
        pipeline.feed_text(text)
    pipeline.finish()


def cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.log"
        write_log(path, args.lines)
        data = path.read_bytes()
    rows = ROWS.findall(data.decode())
    plain, full, alone = [], [], []
    for _ in range(args.repeat):
        plain.append(cpu(lambda: plain_scan(data)))
        full.append(cpu(lambda: scan_stream(io.BytesIO(data), source="bench")))
        alone.append(cpu(lambda: plan_rows(rows)))
    p, f, a = (statistics.median(x) for x in (plain, full, alone))
    print(f"{args.lines:,} lines, median of {args.repeat} (CPU s)")
    print(f"  plain scan       {p:.3f} s  ({args.lines / p:,.0f} lines/s)")
    print(f"  logscan + ladder {f:.3f} s  ({args.lines / f:,.0f} lines/s)  ratio {f / p:.2f}")
    print(f"  ladder rows      {a:.3f} s  ({a / p:.0%} of the plain scan)")
    largest = max(REAL.glob("*.log"), key=lambda q: q.stat().st_size)
    text = largest.read_text()
    real_plain = statistics.median(cpu(lambda: plain_scan(text.encode())) for _ in range(5))
    real_ladder = statistics.median(cpu(lambda: plan_text(text)) for _ in range(5))
    print(f"largest real log {largest.name} ({text.count(chr(10)):,} lines): plain scan "
          f"{real_plain * 1000:.1f} ms, ladder {real_ladder * 1000:.1f} ms, ratio "
          f"{real_ladder / real_plain:.2f}")


def plan_rows(rows: list[tuple[str, ...]]) -> None:
    reader = LadderReader()
    reader.feed_rows(rows)
    plan(reader)


def plan_text(text: str) -> None:
    reader = LadderReader()
    reader.feed_text(text)
    plan(reader)


if __name__ == "__main__":
    main()
