"""Parsing SGLang's line format, grouping and classification (docs/sglang.md §2.1, §2.6)."""

from __future__ import annotations

from console.logs.assembler import EventAssembler, parse_lines
from console.logs.models import LogEvent, Severity
from tests.support.logs_fixtures import HOSTILE_LINES, sample_events


def one(line: str) -> LogEvent:
    events = parse_lines([line])
    assert len(events) == 1
    return events[0]


def test_timestamp_with_and_without_ms() -> None:
    plain = one("[2026-02-19 05:21:47] Init parallel begin.")
    assert plain.timestamp == "2026-02-19 05:21:47"
    assert plain.message == "Init parallel begin."
    ms = one("[2026-02-19 05:21:47.123 TP0] Init parallel begin.")
    assert ms.timestamp == "2026-02-19 05:21:47.123"
    assert ms.ranks == "TP0"
    assert ms.time is not None and ms.time.microsecond == 123000


def test_rank_prefixes_in_emitted_order() -> None:
    event = one("[2026-02-19 05:21:47 DP1 PP0 ATTN_CP2 MOE_DP3 TP5 EP7] hello")
    assert event.ranks == "DP1 PP0 ATTN_CP2 MOE_DP3 TP5 EP7"
    assert event.rank_map == {"DP": 1, "PP": 0, "ATTN_CP": 2, "MOE_DP": 3, "TP": 5, "EP": 7}
    assert event.message == "hello"
    # 0.4.x wrote TP before PP (`run_scheduler_process`: DP, TP, PP; sgl-project/sglang
    # python/sglang/srt/managers/scheduler.py of v0.4.x): any order is a prefix.
    older = one("[2026-02-19 05:21:47 DP0 TP1 PP0] hello")
    assert older.rank_map == {"DP": 0, "TP": 1, "PP": 0} and older.message == "hello"


def test_uvicorn_level_and_access_lines() -> None:
    started = one("[2026-11-29 08:01:14] INFO:     Started server process [12345]")
    assert (started.kind, started.level, started.message) == (
        "uvicorn", "INFO", "Started server process [12345]")
    head = "[2026-11-29 08:01:14] INFO:     127.0.0.1:1 - "
    access = one(head + '"POST /generate HTTP/1.1" 200 OK')
    assert access.kind == "access" and access.severity == Severity.DEBUG
    failed = one(head + '"POST /generate HTTP/1.1" 500 Internal')
    assert failed.severity == Severity.ERROR
    bad = one(head + '"POST /v1/completions HTTP/1.1" 400 Bad')
    assert bad.severity == Severity.WARNING
    warn = one("[2026-11-29 08:01:14] WARNING:  Invalid HTTP request received.")
    assert warn.kind == "uvicorn" and warn.severity == Severity.WARNING


def test_traceback_after_announcing_line_is_one_event() -> None:
    lines = [
        "[2026-02-19 05:22:15 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "scheduler.py", line 10, in run',
        "    foo()",
        "RuntimeError: Decode out of memory. Try to lower your batch size.",
        "Try to allocate 1 tokens.",
        "",
        "[2026-02-19 05:22:16] Received sigquit from a child process.",
    ]
    events = parse_lines(lines)
    assert [len(e.lines) for e in events] == [6, 1]
    crash = events[0]
    assert crash.severity == Severity.ERROR
    assert crash.catalogue_id == "scheduler-exception"
    assert crash.cause_id == "decode-oom"
    assert events[1].seq == 6


def test_bare_traceback_and_chained_exceptions() -> None:
    lines = [
        "[2026-02-19 05:22:15] Load weight begin. avail mem=10.00 GB",
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "b.py", line 2, in <module>',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "Traceback (most recent call last):",
        '  File "c.py", line 3, in <module>',
        "ValueError: second crash",
    ]
    events = parse_lines(lines)
    # An info line does not adopt a traceback; the chain is one event; a new crash is another.
    assert [(e.kind, len(e.lines)) for e in events] == [
        ("sglang", 1), ("traceback", 9), ("traceback", 3)]
    assert events[1].catalogue_id == "cuda-oom"
    assert events[1].severity == Severity.ERROR


def test_standalone_lines_do_not_join_a_block() -> None:
    lines = [
        "[2026-02-19 05:22:15] Capture cuda graph failed: out of memory",
        "Possible solutions:",
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
        "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.2it/s]",
        "/x/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported",
        "  warnings.warn(",
    ]
    events = parse_lines(lines)
    assert [len(e.lines) for e in events] == [3, 1, 2]
    assert events[0].catalogue_id == "cuda-graph-capture-failed"
    assert events[2].catalogue_id == "launch-server-entrypoint"


def test_classification_by_text_without_level_names() -> None:
    assert one("[2026-02-19 05:21:47] Load weight begin. avail mem=1 GB").severity == Severity.INFO
    assert one("[2026-02-19 05:21:47] something is deprecated now").severity == Severity.WARNING
    assert one("[2026-02-19 05:21:47] Failed to connect").severity == Severity.ERROR
    batch = one("[2026-02-19 05:25:03 TP0] Decode batch, #running-req: 64, #token: 9, "
                "token usage: 0.12, cuda graph: True, gen throughput (token/s): 5.0, #queue-req: 0")
    assert batch.severity == Severity.DEBUG and batch.is_batch and batch.catalogue_id is None


def test_streaming_assembler_keeps_last_event_open_until_flush() -> None:
    assembler = EventAssembler()
    assert assembler.feed("[2026-02-19 05:21:47] Scheduler hit an exception: x", 0) is None
    assert assembler.feed("Traceback (most recent call last):", 60) is None
    assert assembler.has_open
    done = assembler.flush()
    assert done is not None and done.offset == 0 and len(done.lines) == 2
    assert assembler.flush() is None


def test_hostile_lines_are_sanitised_on_entry() -> None:
    events = parse_lines(list(HOSTILE_LINES))
    assert len(events) == len(HOSTILE_LINES)
    for event in events:
        for line in event.lines:
            assert "\x1b" not in line and "\x00" not in line and "\x07" not in line
            assert all(ch == "\t" or ch.isprintable() for ch in line), repr(line)
    assert events[0].message == "[bold]not bold[/bold] and [red]not red"  # kept literally
    assert "RED" in events[2].message and "PWNED" not in events[2].message
    assert events[5].message == "return overwrite"  # what a terminal shows after \r


def test_megabyte_line_is_kept_whole() -> None:
    big = "[2026-02-19 05:21:47] " + "x" * (1 << 20)
    event = one(big)
    assert len(event.lines[0]) >= 1 << 20


def test_sample_log_structure() -> None:
    events = sample_events()
    assert sum(e.line_count for e in events) == 116
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs) and events[-1].seq + events[-1].line_count == 116
    kinds = {e.kind for e in events}
    assert {"sglang", "uvicorn", "access", "plain"} <= kinds
    assert any(e.ranks == "TP1" for e in events)
    assert sum(1 for e in events if e.message.startswith("server_args=")) == 2
