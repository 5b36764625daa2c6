"""Typed rows of the run history."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from console.bench.models import RunMeta, StepResult

__all__ = ["RunMeta", "RunRecord", "RunStatus", "RunSummary", "StepResult"]

RunStatus = Literal["running", "finished", "failed", "cancelled", "interrupted"]


class RunSummary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    started_at: float
    finished_at: float | None
    status: RunStatus
    meta: RunMeta
    steps_ok: int = 0
    steps_failed: int = 0
    best_total_tok_s: float | None = None
    best_output_tok_s: float | None = None


class RunRecord(BaseModel):
    """A run with every stored step, in the order they finished."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    summary: RunSummary
    steps: list[StepResult]

    @property
    def id(self) -> int:
        return self.summary.id

    @property
    def label(self) -> str:
        meta = self.summary.meta
        return meta.label or meta.profile or f"run {self.summary.id}"
