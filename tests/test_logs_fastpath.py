"""The parser's fast paths must give exactly what the general paths give.

Each fast path (batch lines inline in feed_lines, the standard decode/prefill regexes, the
literal prefilters, cheap event construction, the aggregator's direct decode update) is
checked against its reference on generated input, so a speed-up can never change a result.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.logs.assembler import EventAssembler, parse_lines
from console.logs.batch_stats import decode_values, parse_batch_general, parse_batch_message
from console.logs.catalogue import default_catalogue
from console.logs.classify import SEVERITY_LITERALS, severity_by_patterns, severity_from_text
from console.logs.models import LogEvent, Severity, new_event
from console.logs.prefilter import anchor, compile_literals
from console.logs.server_stats import StatsAggregator
from tests.support.logs_fixtures import HOSTILE_LINES, SAMPLE_LOG

SAMPLE_LINES = SAMPLE_LOG.read_text("utf-8").splitlines()
TS = "[2026-02-19 05:25:03"
POOL = [
    f"{TS} TP0] Decode batch, #running-req: 64, #token: 9, token usage: 0.12, cuda graph: True, "
    "gen throughput (token/s): 5321.47, #queue-req: 0",
    f"{TS} DP1 TP3] Prefill batch, #new-seq: 4, #new-token: 4096, #cached-token: 0, token usage:"
    " 0.01, #running-req: 12, #queue-req: 3, #pending-token: 1024, cuda graph: False, input "
    "throughput (token/s): 31544.71",
    f"{TS} TP0] Decode batch. #running-req: 1, #token: 20, token usage: 0.00, gen throughput "
    "(token/s): 5.71, #queue-req: 0",
    f'{TS}] INFO:     127.0.0.1:5 - "POST /generate HTTP/1.1" 200 OK',
    f'{TS}] INFO:     127.0.0.1:5 - "GET /health HTTP/1.1" 503 Service Unavailable',
    f'{TS}] INFO:      127.0.0.1:5 - "GET /x HTTP/1.1" 404 Not Found',
    f"{TS} TP0] INFO:     not an access line",
    f"{TS} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3",
    f"{TS} TP0] Scheduler hit an exception: Traceback (most recent call last):",
    f"{TS}] Load weight begin. avail mem=138.52 GB",
    f"{TS}] WARNING:  Invalid HTTP request received.",
    "Traceback (most recent call last):",
    '  File "x.py", line 1, in <module>',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "During handling of the above exception, another exception occurred:",
    "    indented continuation",
    "",
    "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.2s/it]",
    "plain print output",
    *HOSTILE_LINES,
]


def per_line(lines: list[str], offsets: list[int]) -> list[LogEvent]:
    assembler = EventAssembler(source="a.log")
    events = [e for raw, off in zip(lines, offsets, strict=True)
              if (e := assembler.feed(raw, off)) is not None]
    last = assembler.flush()
    return events + ([last] if last is not None else [])


def batched(lines: list[str], offsets: list[int], chunk: int) -> list[LogEvent]:
    assembler = EventAssembler(source="a.log")
    events: list[LogEvent] = []
    for start in range(0, len(lines), chunk):
        events += assembler.feed_lines(lines[start : start + chunk],
                                       offsets[start : start + chunk])
    last = assembler.flush()
    return events + ([last] if last is not None else [])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(POOL), max_size=60), st.integers(1, 7))
def test_feed_lines_equals_feed(lines: list[str], chunk: int) -> None:
    offsets = list(range(0, 10 * len(lines), 10))
    assert batched(lines, offsets, chunk) == per_line(lines, offsets)


def test_feed_lines_equals_feed_on_the_sample_log() -> None:
    offsets = list(range(len(SAMPLE_LINES)))
    expected = per_line(SAMPLE_LINES, offsets)
    assert batched(SAMPLE_LINES, offsets, 13) == expected
    assert batched(SAMPLE_LINES, offsets, 10_000) == expected
    assert any(e.kind == "traceback" or len(e.lines) > 1 for e in expected)


def test_fast_events_are_real_frozen_log_events() -> None:
    fast = new_event(3, "sglang", ("x",), "x", Severity.DEBUG, "t", "TP0", None, None, None, 7,
                     "a.log")
    slow = LogEvent(3, "sglang", ("x",), "x", Severity.DEBUG, timestamp="t", ranks="TP0",
                    offset=7, source="a.log")
    assert type(fast) is LogEvent and fast == slow and hash(fast) == hash(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.seq = 4  # type: ignore[misc]
    assert dataclasses.replace(fast, seq=4).seq == 4
    for event in parse_lines(POOL):
        assert type(event) is LogEvent


decimal = st.builds(lambda a, b: f"{a}.{b:02d}", st.integers(0, 99999), st.integers(0, 99))
count = st.integers(0, 10**6).map(str)


@given(st.booleans(), count, count, decimal, st.booleans(), decimal, decimal, decimal, count,
       st.sampled_from(["cuda", "cpu"]), st.sampled_from(["", ", est. x: 1.0", " "]))
def test_decode_fast_path_equals_general(it: bool, run: str, tok: str, use: str, spec: bool,
                                         alen: str, arate: str, gen: str, queue: str,
                                         graph: str, tail: str) -> None:
    message = (f"Decode batch{' [7]' if it else ''}, #running-req: {run}, #token: {tok}, "
               f"token usage: {use}, "
               + (f"accept len: {alen}, accept rate: {arate}, " if spec else "")
               + f"{graph} graph: True, gen throughput (token/s): {gen}, #queue-req: {queue}"
               + tail)
    general = parse_batch_general(message, timestamp="t", ranks="TP0")
    assert parse_batch_message(message, timestamp="t", ranks="TP0") == general
    values = decode_values(message)
    if values is not None:
        assert general is not None
        assert values == (general.running_reqs, general.queue_reqs, general.token_usage,
                          general.cuda_graph, general.gen_throughput, general.num_tokens,
                          general.accept_len)


@given(st.booleans(), count, count, count, decimal, count, count, count, decimal,
       st.sampled_from(["True", "False"]))
def test_prefill_fast_path_equals_general(it: bool, seqs: str, new: str, cached: str, use: str,
                                          run: str, queue: str, pending: str, inp: str,
                                          graph: str) -> None:
    message = (f"Prefill batch{' [7]' if it else ''}, #new-seq: {seqs}, #new-token: {new}, "
               f"#cached-token: {cached}, token usage: {use}, #running-req: {run}, "
               f"#queue-req: {queue}, #pending-token: {pending}, cuda graph: {graph}, "
               f"input throughput (token/s): {inp}")
    assert parse_batch_message(message) == parse_batch_general(message)
    assert decode_values(message) is None


# Words the severity regexes look for, written out independently of SEVERITY_LITERALS.
FRAGMENTS = [*SEVERITY_LITERALS, *default_catalogue().literals, "Warning", "warning:",
             "UserWarning", "deprecated", "Deprecated", "retracted", "Traceback (most recent",
             "segfault", "Segmentation fault", "core dumped", "not found", "sub-optimal",
             "warn", "Warn", "error:",
             " ", "(", ":", "x", "Deprecat", "Retract", "fallback", "Fallback", "ValueError:",
             "Errno", "\n", "fail", "FAT", "arn"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=8).map("".join))
def test_severity_prefilter_never_changes_the_answer(message: str) -> None:
    assert severity_from_text(message) == severity_by_patterns(message)


@settings(max_examples=300)
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=4), max_size=8).map("".join))
def test_catalogue_prefilter_never_changes_the_answer(message: str) -> None:
    catalogue = default_catalogue()
    # The reference: entries with one of their literals in the text, first regex match wins.
    expected = next((e.id for e, regex in catalogue._compiled
                     if any(lit in message for lit in e.literals) and regex.search(message)),
                    None)
    found = catalogue.match(message)
    assert (found.entry.id if found else None) == expected


@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=12), st.text(max_size=30),
       st.text(max_size=30), st.integers(0, 11))
def test_literal_regex_finds_every_literal(literals: list[str], before: str, after: str,
                                           pick: int) -> None:
    regex = compile_literals(literals)
    assert regex is not None
    literal = literals[pick % len(literals)]
    assert regex.search(before + literal + after) is not None
    for item in literals:
        assert anchor(item) in item
        assert len(anchor(item)) >= min(4, len(item))


def test_literal_regex_rejects_text_without_anchors() -> None:
    regex = compile_literals(["KV cache pool is full", "out of memory", "Traceback"])
    assert regex is not None
    assert regex.search("Load weight begin. avail mem=138.52 GB") is None
    assert re.compile(regex.pattern).search("CUDA out of memory.") is not None


def test_aggregator_fast_decode_equals_add_per_event() -> None:
    events = parse_lines(SAMPLE_LINES + [p for p in POOL if p.startswith(TS)] * 3)
    reference = StatsAggregator(history=50)
    for event in events:
        if event.is_batch:
            stats = parse_batch_message(event.message, timestamp=event.timestamp,
                                        ranks=event.ranks)
            if stats is not None:
                reference.add(stats)
        elif event.catalogue_id in ("kv-pool-full-retract", "decode-oom-retract-legacy"):
            reference._retractions += 1
            reference._changed()
    for chunk in (1, 3, 1000):
        fast = StatsAggregator(history=50)
        used = sum(fast.add_events(events[i : i + chunk]) for i in range(0, len(events), chunk))
        assert used == sum(1 for e in events if e.is_batch and parse_batch_message(e.message))
        assert fast.snapshot() == reference.snapshot()
