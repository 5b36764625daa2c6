"""Streaming `/generate` responses, written by the engine's wakeup instead of one task per stream.

Each stream's bytes are the same as before (docs/sglang.md §3.7: cumulative text unless
--incremental-streaming-output); what changed is who writes them. A parked
handler used to be woken once per token: a future, a loop callback and a resumed coroutine
chain per stream per token, 1024 of them in a row when a lock-step batch fell due. Now the
engine, in the same wakeup that produced the tokens, calls `NativeStream.push`, which builds
the event and hands it to the socket at once (HTTP/1.1 chunk framing, as aiohttp's writer
would). The handler only wakes to finish, or when a direct write is not safe: the transport
is closing (the handler's own write then raises and the disconnect is logged as before) or
its buffer is over `DIRECT_LIMIT` (the handler writes and waits for the drain: a slow reader
gets backpressure, not an unbounded buffer).
"""

from __future__ import annotations

import time
from typing import Any

from console.sim import protocol as P
from console.sim.engine import Req
from console.sim.lateness import Lateness

DIRECT_LIMIT = 1 << 16  # aiohttp's StreamWriter drains above 64 KiB too


class NativeStream:
    """One `/generate` stream's state: what was sent, and how to send what is new."""

    __slots__ = ("chunked", "done", "ids_acc", "incremental", "lateness", "oldest_new", "req",
                 "sent", "text_acc", "transport")

    def __init__(self, req: Req, incremental: bool, lateness: Lateness | None) -> None:
        self.req = req
        self.incremental = incremental
        self.lateness = lateness
        self.sent = 0
        self.text_acc = ""
        self.ids_acc = ""
        self.done = False  # the final event (and [DONE]) has been handed over
        self.transport: Any = None
        self.chunked = True
        self.oldest_new = -1  # index of the oldest token in the last event; -1: none new

    def attach(self, transport: Any, chunked: bool) -> None:
        """The prepared response's socket (headers already sent): `push` may write to it."""
        self.transport = transport
        self.chunked = chunked

    def has_news(self) -> bool:
        return len(self.req.output_ids) > self.sent or (self.req.finished and not self.done)

    def event(self) -> bytes:
        """The next SSE event (and `[DONE]` after the final one), marking it sent."""
        req = self.req
        n = len(req.output_ids)
        before = self.sent
        if n > before:
            new_text = P.json_text_of(req.output_ids, before)
            new_ids = ",".join(map(str, req.output_ids[before:n]))
            if self.incremental:
                self.text_acc, self.ids_acc = new_text, new_ids
            else:
                self.text_acc += new_text
                self.ids_acc = f"{self.ids_acc},{new_ids}" if self.ids_acc else new_ids
            self.sent = n
        final = req.finished
        data = P.sse(f'{{"text":"{self.text_acc}","output_ids":[{self.ids_acc}],'
                     f'"meta_info":{P.meta_info(req, final)}}}')
        if final:
            self.done = True
            data += P.DONE
        self.oldest_new = before if n > before else -1
        return data

    def written(self) -> None:
        """The last event's bytes left: its lateness (console.sim.lateness) is known now."""
        if self.lateness is not None and self.oldest_new >= 0:
            self.lateness.wrote(self.req.created, self.oldest_new, time.monotonic())

    def push(self) -> bool:
        """Called by the engine when tokens arrived. Writes them now if that is safe; True
        when the handler need not wake (nothing left for it to do)."""
        transport = self.transport
        if (transport is None or transport.is_closing()
                or transport.get_write_buffer_size() > DIRECT_LIMIT):
            return False
        data = self.event()
        transport.write(b"%x\r\n%b\r\n" % (len(data), data) if self.chunked else data)
        self.written()
        return not self.done
