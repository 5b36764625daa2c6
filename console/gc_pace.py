"""How often the cyclic garbage collector runs in the long-running processes (the console and
the exporter).

With Python's default (a young-generation pass every 700 net allocations), a console watching
64 hosts spent ~7% of a core in the collector: every GPU sample, log line and status answer is
a handful of tracked objects that live in a host's ring buffer for minutes, so the frequent
young passes promoted them and then whole-heap passes walked every ring (~6 in 30 s, 0.25 s
each). Collecting the young generation every 20,000 allocations lets most of them be freed by
reference counting first: 2.8 -> 0.5 s of collector time over the same 30 s, and 23.4% -> 20.0%
of a core for the console (tests/bench/bench_fleet_scale.py, same run). A young pass then takes
~25 ms, below what a terminal redraw shows.
"""

from __future__ import annotations

import gc

YOUNG_EVERY = 20_000
MIDDLE_EVERY = 20


def pace_gc() -> None:
    """Collect less often (never more often than the process was already set to)."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_EVERY), max(middle, MIDDLE_EVERY), old)
