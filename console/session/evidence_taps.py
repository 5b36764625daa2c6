"""Tees of a session's own observers, handed to a console sweep as its evidence sources.

A console sweep reads the host through what the session already runs (its GPU agent, its log
follower, its `/metrics` scrape), so the host runs one agent and one follower, and the Why
view's evidence is the data the operator watched. While a tee is attached the session scrapes
`/metrics` as often as the evidence wants (METRICS_INTERVAL_S), else at its own pace.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # console.diagnose (and httpx) load with the first sweep, not the first frame
    from console.diagnose.sources import EvidenceSources, LogTee, Tee
    from console.gpu.models import GpuEvent, GpuHeader
    from console.logs.models import LogEvent


class EvidenceTaps:
    def __init__(self) -> None:
        self._gpu: list[Tee[GpuEvent]] = []
        self._logs: list[LogTee] = []
        self._metrics: list[Tee[str]] = []
        self._header: GpuHeader | None = None

    @property
    def attached(self) -> bool:
        return bool(self._gpu or self._logs or self._metrics)

    def metrics_period(self, own: float) -> float:
        if not self._metrics:
            return own
        from console.diagnose.sources import METRICS_INTERVAL_S

        return min(own, METRICS_INTERVAL_S)

    def gpu(self, event: GpuEvent) -> None:
        from console.gpu.models import GpuHeader

        if isinstance(event, GpuHeader):
            self._header = event  # a sweep attached later still learns the topology
        for tee in self._gpu:
            tee.feed(event)

    def log(self, events: Sequence[LogEvent]) -> None:
        if self._logs:
            lines = [line for event in events for line in event.lines]
            for tee in self._logs:
                tee.feed(lines)

    def metrics(self, text: str) -> None:
        for tee in self._metrics:
            tee.feed(text)

    @contextlib.asynccontextmanager
    async def attach(
        self, head: Callable[[], Awaitable[list[str]]] | None
    ) -> AsyncIterator[EvidenceSources]:
        """Sources fed from now until the block ends. `head` reads the log's startup lines
        once (the follower began at the tail)."""
        from console.diagnose.sources import EvidenceSources, LogTee, Tee

        first = [self._header] if self._header is not None else []
        gpu: Tee[GpuEvent] = Tee(first)
        log = LogTee(head)
        metrics: Tee[str] = Tee()
        self._gpu.append(gpu)
        self._logs.append(log)
        self._metrics.append(metrics)
        try:
            yield EvidenceSources(log=log, gpu=gpu, metrics=metrics)
        finally:
            self._gpu.remove(gpu)
            self._logs.remove(log)
            self._metrics.remove(metrics)
            for tee in (gpu, log, metrics):
                await tee.close()
