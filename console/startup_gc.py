"""The console's start-up runs without the cyclic garbage collector.

Start-up allocates some 10^5 long-lived objects (modules, classes, pydantic and dataclass
machinery, widgets) and frees few: every collection that allocation triggers scans them and
finds nothing, about a tenth of the CPU `plateau demo` spends before its first frame. The app
resumes collection after its first refresh, with what exists then frozen out of the
collector's sight (it lives for the whole run).
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
