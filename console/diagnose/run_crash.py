"""The crash a stored run's server died of: a sweep keeps the server log's tail with the step
the crash failed (StepResult.log_tail), read as `plateau logscan` reads a log
(console/logs/crash_finding.py), so `plateau diagnose RUN`, the Why view and the report lead
with it as `diagnose --log` does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from console.bench.models import StepResult
from console.logs.assembler import parse_lines
from console.logs.crash_finding import CrashFinding, CrashWatch


@dataclass(frozen=True, slots=True)
class RunCrash:
    step: StepResult
    finding: CrashFinding

    def sentence(self) -> str:
        """`GPU out of memory at c=256 (step 5): torch.OutOfMemoryError: CUDA out of ...`."""
        return (f"{self.finding.title} at c={self.step.concurrency} (step {self.step.index}): "
                f"{self.finding.text}")


def run_crash(steps: Sequence[StepResult]) -> RunCrash | None:
    """The first step whose kept log tail shows a crash, with it."""
    for step in steps:
        if not step.log_tail:
            continue
        watch = CrashWatch()
        watch.feed(parse_lines(step.log_tail))
        if watch.finding is not None:
            return RunCrash(step, watch.finding)
    return None
