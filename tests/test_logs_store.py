"""The bounded store behind the log view: caps, filters, search."""

from __future__ import annotations

import re

from console.logs.assembler import parse_lines
from console.logs.models import Severity
from console.logs.store import LogFilter, LogStore
from tests.support.logs_fixtures import sample_events


def lines(n: int, start: int = 0) -> list[str]:
    return [f"[2026-02-19 05:21:47 TP{i % 2}] line {i}" for i in range(start, start + n)]


def test_caps_lines_and_keeps_order() -> None:
    store = LogStore(max_lines=100)
    for chunk in range(50):
        store.append(parse_lines(lines(37, chunk * 37)))
    assert store.line_count <= 100
    assert store.dropped_lines == 50 * 37 - store.line_count
    numbers = [int(store.line(i).rsplit(" ", 1)[1]) for i in range(store.visible_count)]
    assert numbers == list(range(50 * 37 - store.line_count, 50 * 37))
    assert len(store._rows) <= 2 * 100 + 37  # the index is compacted too


def test_caps_characters() -> None:
    store = LogStore(max_lines=10_000, max_chars=10_000)
    store.append(parse_lines([f"[2026-02-19 05:21:47] {'x' * 990}" for _ in range(50)]))
    assert store.char_count <= 10_000 and store.line_count == 9


def test_filter_hides_non_matching_and_follows_appends() -> None:
    store = LogStore()
    store.append(sample_events())
    store.set_filter(LogFilter(min_severity=Severity.ERROR))
    rows = [store.row(i)[0] for i in range(store.visible_count)]
    assert rows and all(e.severity >= Severity.ERROR for e in rows)
    assert store.visible_count == 13  # the 10-line traceback stays whole
    store.append(parse_lines(["[2026-02-19 05:21:47] Failed badly", "[2026-02-19 05:21:47] ok"]))
    assert store.line(store.visible_count - 1).endswith("Failed badly")
    store.set_filter(LogFilter(ranks=frozenset({"TP1"})))
    assert all(store.row(i)[0].ranks == "TP1" for i in range(store.visible_count))
    store.set_filter(LogFilter(pattern=re.compile(r"Decode batch")))
    assert store.visible_count == 22
    store.set_filter(LogFilter())
    assert store.visible_count == store.line_count


def test_search_wraps_both_ways() -> None:
    store = LogStore()
    store.append(sample_events())
    pattern = re.compile("fired up")
    first = store.search(pattern, 0)
    assert first is not None
    second = store.search(pattern, first)
    assert first is not None and second is not None and second > first
    assert store.search(pattern, second) == first  # wraps
    assert store.search(pattern, first, forward=False) == second
    assert store.search(re.compile("no such text"), 0) is None
    row_id = store.row_id(second)
    assert store.visible_index_of(row_id) == second


def test_rows_round_trip_and_packed_events_leave_the_gc() -> None:
    import gc

    from console.logs.assembler import parse_lines
    from tests.support.logs_fixtures import sample_events

    events = sample_events() + parse_lines(["Traceback (most recent call last):", "  x",
                                            "ValueError: boom"])
    store = LogStore(max_lines=100_000)
    store.append(events)
    rebuilt = [store.row(i) for i in range(store.visible_count)]
    assert [event for event, index in rebuilt if index == 0] == events
    assert all(store.line(i) == event.lines[index] for i, (event, index) in enumerate(rebuilt))
    # CPython untracks a tuple only once the tuples inside it are untracked, and one collection
    # may visit the outer tuple first: after two collections every packed row is out of sight.
    gc.collect()
    gc.collect()
    # Retained rows cost the cyclic GC nothing (a full collection runs on the UI loop).
    assert not any(gc.is_tracked(packed) for packed in store._event_objs)
