"""The cyclic garbage collector in the console's process (and the exporter's).

Start-up runs without it.

Start-up allocates some 10^5 long-lived objects (modules, classes, pydantic and dataclass
machinery, widgets) and frees few: every collection that allocation triggers scans them and
finds nothing, about a tenth of the CPU `plateau demo` spends before its first frame. The app
resumes collection after its first refresh, with what exists then frozen out of the
collector's sight (it lives for the whole run).

Then it runs less often than Python's default (`pace_gc`). With the default (a young-generation
pass every 700 net allocations), a console watching 64 hosts spent ~7% of a core in the
collector: every GPU sample, log line and status answer is a handful of tracked objects that
live in a host's ring buffer for minutes, so the frequent young passes promoted them and then
whole-heap passes walked every ring (~6 in 30 s, 0.25 s each). A young pass every 20,000
allocations lets most of them be freed by reference counting first: 2.8 -> 0.5 s of collector
time over the same 30 s, and 23.4% -> 20.0% of a core for the console
(tests/bench/bench_fleet_scale.py, same run). A young pass then takes ~25 ms.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Around a console command (its imports included): collection resumes on the way out,
    whatever happened, if the app did not resume it at its first frame."""
    gc.disable()
    try:
        yield
    finally:
        resume_gc()


def resume_gc() -> None:
    """After the first frame, or when the command ends before one: idempotent."""
    gc.freeze()
    gc.enable()


YOUNG_EVERY = 20_000
MIDDLE_EVERY = 20


def pace_gc() -> None:
    """Collect less often (never more often than the process was already set to)."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_EVERY), max(middle, MIDDLE_EVERY), old)
