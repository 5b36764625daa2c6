"""logscan's whole-file path must give what the line-by-line path gives (issue 19 item 6).

`plateau logscan` reads text in chunks of whole lines (bounded_text_chunks), reads standard
batch and access lines with one regex call per chunk and no event (scan_rows.ROWS,
ScanPipeline, LogScanner.standard_rows) and the rest through the assembler, and other batch
lines' values through scan_values; each is checked against its reference here, so a speed-up
cannot change a report.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from console.commands.logscan import scan_stream
from console.logs.assembler import EventAssembler
from console.logs.batch_stats import parse_batch_message, scan_values
from console.logs.bounded_lines import bounded_lines, bounded_text_chunks
from console.logs.scan import LogScanner, ScanReport
from console.logs.scan_fast import ScanPipeline
from tests.support.logs_fixtures import HOSTILE_LINES, SAMPLE_LOG

# Bytes that stress the splitter: newlines, CR, invalid and partial UTF-8, a multi-byte char.
PIECES = [b"\n", b"\r", b"a", b"[2026-02-19 05:25:03 TP0] ", b"\xff", b"\xe2\x82", b"\xe2\x82\xac",
          b"  ", b"x" * 40]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.integers(8, 64), st.integers(1, 50))
def test_text_chunks_hold_the_lines_of_bounded_lines(pieces: list[bytes], max_bytes: int,
                                          chunk: int) -> None:
    data = b"".join(pieces)
    expected = list(bounded_lines(io.BytesIO(data), max_bytes=max_bytes, chunk_bytes=chunk))
    chunks = list(bounded_text_chunks(io.BytesIO(data), max_bytes=max_bytes, chunk_bytes=chunk))
    assert all(text.endswith("\n") for text in chunks)
    assert [line for text in chunks for line in text[:-1].split("\n")] == expected


def test_text_chunks_cut_a_giant_line_like_bounded_lines() -> None:
    data = b"head\n" + b"y" * 5000 + b"\ntail\n"
    chunks = list(bounded_text_chunks(io.BytesIO(data), max_bytes=100, chunk_bytes=64))
    lines = [line for text in chunks for line in text[:-1].split("\n")]
    assert lines == list(bounded_lines(io.BytesIO(data), max_bytes=100))
    assert lines[1].endswith("[4900 more bytes dropped]") and lines[2] == "tail"


BATCH_MESSAGES = [
    "Decode batch, #running-req: 64, #token: 9, token usage: 0.12, cuda graph: True, "
    "gen throughput (token/s): 5321.47, #queue-req: 0",
    "Decode batch [12], #running-req: 3, #token: 9, token usage: 0.5, accept len: 2.31, "
    "accept rate: 0.77, cuda graph: False, gen throughput (token/s): 12.5, #queue-req: 7",
    "Prefill batch, #new-seq: 4, #new-token: 4096, #cached-token: 0, token usage: 0.01, "
    "#running-req: 12, #queue-req: 3, #pending-token: 1024, cuda graph: False, input "
    "throughput (token/s): 31544.71",
    "Decode batch. #running-req: 1, #token: 20, token usage: 0.00, gen throughput "
    "(token/s): 5.71, #queue-req: 0",
    "Decode batch, #running-req: 5, #full token: 10, full token usage: 0.2, swa token usage: "
    "0.4, cpu graph: True, gen throughput (token/s): 1.0, #queue-req: 0, mfu: 0.3",
    "Prefill batch, #new-seq: 1, #new-token: x, token usage: bad",
    "Decode batch",
    "Decoding nothing",
]


def test_scan_values_are_what_parse_batch_message_reads() -> None:
    for message in BATCH_MESSAGES:
        stats = parse_batch_message(message)
        values = scan_values(message)
        if stats is None:
            assert values is None, message
            continue
        decode = stats.kind == "decode"
        assert values == (decode, stats.running_reqs, stats.queue_reqs, stats.token_usage,
                          stats.cuda_graph,
                          stats.gen_throughput if decode else stats.input_throughput,
                          stats.accept_len), message


def _per_line_scan(lines: list[str]) -> ScanReport:
    """The reference: every line through EventAssembler.feed, every event to the scanner."""
    scanner = LogScanner("s")
    assembler = EventAssembler(scanner.catalogue, source="s")
    for line in lines:
        event = assembler.feed(line)
        if event is not None:
            scanner.feed([event])
    last = assembler.flush()
    if last is not None:
        scanner.feed([last])
    return scanner.report()


def _pipeline_scan(lines: list[str], chunk: int) -> ScanReport:
    scanner = LogScanner("s")
    pipeline = ScanPipeline(scanner, EventAssembler(scanner.catalogue, source="s"))
    for start in range(0, len(lines), chunk):
        pipeline.feed_text("".join(f"{line}\n" for line in lines[start : start + chunk]))
    return pipeline.finish()


def _per_line_report(lines: list[str]) -> str:
    return _per_line_scan(lines).model_dump_json()


def _pipeline_report(lines: list[str], chunk: int) -> str:
    return _pipeline_scan(lines, chunk).model_dump_json()


TS = "[2026-02-19 05:25:03"
POOL = [
    *(f"{TS} TP0] {m}" for m in BATCH_MESSAGES),
    f"{TS}] Decode batch, #running-req: 0, #token: 9, token usage: 0.12, cuda graph: True, "
    "gen throughput (token/s): 1.5, #queue-req: 0",
    "[2026-02-19 05:26:09 TP1] Decode batch, #running-req: 8, #token: 9, token usage: 0.3, "
    "cuda graph: False, gen throughput (token/s): 99.0, #queue-req: 2",
    "[2026-02-19 05:29:09 DP1 TP1] Prefill batch, #new-seq: 4, #new-token: 4096, #cached-token: "
    "0, token usage: 0.01, #running-req: 0, #queue-req: 3, #pending-token: 1024, cuda graph: "
    "True, input throughput (token/s): 31544.71",
    f'{TS}] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 503 Service Unavailable',
    f'{TS}] INFO:     127.0.0.1:5 - "POST /v1/chat HTTP/1.1" 500 Internal Server Error',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /api/x?api_key=s3cret HTTP/1.1" 404 Not Found',
    f'{TS} TP0] INFO:     127.0.0.1:5 - "GET /x HTTP/1.1" 200 OK',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /\x1b[31m HTTP/1.1" 200 OK',
    # Access lines that redact_secrets changes: the regex must leave them to the general path.
    f'{TS}] INFO:     127.0.0.1:5 - "GET /health--api-key HTTP/1.1" 503 Service Unavailable',
    f'{TS}] INFO:     h--api-key - "POST /generate HTTP/1.1" 500 Internal Server Error',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /x?api_key=\'k\' HTTP/1.1" 404 Not Found',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /x HTTP/1.1" 404 api_key="a HTTP/1.1" 200',
    "[2026-02-19 05:25:03.250] Decode batch, #running-req: 00, #token: 9, token usage: 0.12, "
    "cuda graph: True, gen throughput (token/s): 2.5, #queue-req: 0",
    "[2026-02-19 05:25:04 TP0] Decode batch, #running-req: 2, #token: 9, token usage: 0.1, "
    "cuda graph: True, gen throughput (token/s): nan, #queue-req: 0",
    "Decode batch, #running-req: 3, #token: 9, token usage: 0.12, cuda graph: True, "
    "gen throughput (token/s): 7.5, #queue-req: 1",
    "junk\r    indented once the terminal redraws",
    f'{TS}] INFO:     127.0.0.1:5 - "GET /a?api_key="b HTTP/1.1" 200 OK',
    f"{TS}] server_args={{'model_path': '/m', 'tp_size': 2}}",
    f"{TS} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3",
    f"{TS} TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f"{TS}] The server is fired up and ready to roll!",
    f"{TS} TP0] Load weight begin. avail mem=138.52 GB",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "    indented continuation",
    "",
    "Capturing batches (bs=8 avail_mem=17.38 GB):  50%|█████     | 18/36 [00:09<00:00]",
    "plain print output",
    *HOSTILE_LINES,
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(POOL), max_size=40), st.integers(1, 7))
def test_pipeline_equals_the_per_line_scan(lines: list[str], chunk: int) -> None:
    assert _pipeline_report(lines, chunk) == _per_line_report(lines)


def test_pipeline_equals_the_per_line_scan_for_every_pair_of_lines() -> None:
    # Every line right after every other (continuations, a standard line closing an open
    # event), in one chunk and across chunk boundaries.
    lines = [line for first in POOL for second in POOL for line in (first, second)]
    for chunk in (1, 5000):
        assert _pipeline_report(lines, chunk) == _per_line_report(lines)


def test_feed_text_reads_a_last_line_without_a_newline() -> None:
    scanner = LogScanner("s")
    pipeline = ScanPipeline(scanner, EventAssembler(scanner.catalogue, source="s"))
    pipeline.feed_text("\n".join(POOL))
    pipeline.feed_text("")
    assert pipeline.finish().model_dump_json() == _per_line_report(POOL)


def _decode(stamp: str, rate: str = "5.5") -> str:
    return (f"[2026-02-19 {stamp} TP0] Decode batch, #running-req: 3, #token: 9, token usage: "
            f"0.2, cuda graph: True, gen throughput (token/s): {rate}, #queue-req: 1")


def _prefill(stamp: str) -> str:
    return (f"[2026-02-19 {stamp} TP0] Prefill batch, #new-seq: 1, #new-token: 8, #cached-token: "
            "0, token usage: 0.01, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: "
            "True, input throughput (token/s): 9.5")


# Short logs whose figures are worked out by hand (both paths share LogScanner._tally, so
# they are checked against these, not only against each other).
ACCESS_500 = f'{TS}] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 500 Internal Server Error'
FIGURES: list[tuple[list[str], Callable[[ScanReport], bool]]] = [
    # Severities are reported in the order they first appear: a decode line (DEBUG) before the
    # 500 (ERROR) in the same run of standard lines.
    ([f"{TS}] server_args={{'tp_size': 2}}", _decode("05:25:03"), ACCESS_500, "plain"],
     lambda r: list(r.severity_counts) == ["info", "debug", "error"]),
    # A prefill admitting work to an empty server 7 s after the last batch line ends an idle
    # spell: the next decode line is not a rate (the first of the log is: issue 23).
    ([_decode("05:25:03"), _prefill("05:25:10"), _decode("05:25:11"), _decode("05:25:12")],
     lambda r: r.batches.decode_lines_not_rate == 1 and r.batches.peak_gen_line == 1),
    # After a 4-minute gap, a decode line in the prefill's second is still the first after idle.
    ([_decode("05:25:03"), _prefill("05:29:09"), _decode("05:29:09"), _decode("05:29:09")],
     lambda r: r.batches.decode_lines_not_rate == 1 and r.batches.peak_gen_line == 1),
    # A NaN rate first is the peak (nothing compares above it), as the values were compared.
    ([_decode("05:25:04", "nan"), _decode("05:25:04", "9.5")],
     lambda r: r.batches.peak_gen_line == 1),
    # Decode lines in the same second are rates, the first of the log too; the mean is over them.
    ([_decode("05:25:03", "1.0"), _decode("05:25:03", "2.0"), _decode("05:25:03", "4.0"),
      _prefill("05:25:03"), _decode("05:25:03", "3.0")],
     lambda r: (r.batches.decode_lines_not_rate, r.batches.mean_gen_throughput,
                r.batches.peak_gen_line, r.batches.max_running_reqs) == (0, 2.5, 3, 3)),
]


def test_short_logs_give_the_figures_worked_out_by_hand() -> None:
    for lines, holds in FIGURES:
        assert holds(_per_line_scan(lines)), lines
        for chunk in (1, 2, 10):
            assert holds(_pipeline_scan(lines, chunk)), (lines, chunk)


def test_scan_stream_equals_the_per_line_scan_on_the_sample_log() -> None:
    data = SAMPLE_LOG.read_bytes() + "\n".join(POOL).encode("utf-8", "surrogateescape")
    stream = scan_stream(io.BytesIO(data), source="s")
    assert stream.ladder is not None and stream.ladder.decode_lines  # logscan adds the ladder
    fast = stream.model_copy(update={"ladder": None}).model_dump_json()
    assert fast == _per_line_report(list(bounded_lines(io.BytesIO(data))))
    assert '"decode_lines":0' not in fast  # the data has batch lines: the check bites
