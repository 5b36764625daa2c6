"""The tune job's request, state, ladder and progress (console.jobs.tune runs the job).

Apart from the job so that what only carries or prints them (`plateau tune --report`, a
console view) does not import the job's machinery. The whole state is one pydantic model,
stored as JSON in the run store's `tunes` table after every finished A/B: `--resume` loads
it and goes on from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from console.config_models import FlagValue, ServerProfile, SweepPreset
from console.jobs.tune_objective import DEFAULT_OBJECTIVE, Objective, objective

TuneStatus = Literal["running", "stopped", "done", "failed"]
RungOutcome = Literal["kept", "rejected", "failed", "invalid", "skipped"]
TuneStage = Literal["baseline", "diagnose", "validate", "restart", "sweep", "verdict",
                    "revert", "save", "done"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Change(_Model):
    """A profile change: flags and environment (None removes one)."""

    flags: dict[str, FlagValue | None] = {}
    env: dict[str, str | None] = {}

    def text(self) -> str:
        parts = [f"--{k} {v}" if v is not None and v is not True else
                 (f"--{k}" if v is True else f"drop --{k}") for k, v in self.flags.items()]
        parts += [f"{k}={v}" if v is not None else f"unset {k}" for k, v in self.env.items()]
        return ", ".join(parts) or "(nothing)"

    def key(self) -> str:
        """Identity of the change, so the same change is never A/B'd twice from one base."""
        return self.model_dump_json()

    def merged(self, other: Change) -> Change:
        return Change(flags={**self.flags, **other.flags}, env={**self.env, **other.env})


class Candidate(_Model):
    """One change to A/B: where it came from and what it should do."""

    cause: str
    confidence: float
    change: Change
    why: str  # "the evidence's value", "a larger value", "with <cause> (they interact)"
    gain_pct: float | None = None  # the diagnosis's prediction
    at_concurrency: int | None = None
    levels: list[int] = []  # where the A/B measures
    interacts: list[str] = []  # notes on causes this one interacts with


class Rung(_Model):
    """One step of the ladder: a candidate's A/B and what came of it."""

    step: int
    cause: str
    change: str
    applied: Change = Change()  # the change as data (`change` says it in words)
    why: str
    outcome: RungOutcome
    reason: str = ""  # why it was rejected, failed or skipped (and the verdict when kept)
    predicted_pct: float | None = None
    levels: list[int] = []
    delta_pct: float | None = None  # at the knee (the levels measured), B vs A
    half_width_pct: float | None = None
    sentence: str = ""
    cumulative_pct: float = 0.0  # the kept profile's gain over the start so far
    restarts: int = 0  # cumulative, the tune's
    minutes: float = 0.0  # cumulative, the tune's
    run_a: int | None = None
    run_b: int | None = None
    interacts: list[str] = []
    # The tuner was stopped or killed during this step's A/B and resumed: the A/B ran again
    # from its first pass (the decision is the same; the restarts and minutes are more).
    resumed: bool = False
    reused_a: int | None = None  # A's repeats are the run of the previous kept step's B side

    def same_as(self, other: Rung) -> bool:
        """The same decision (for a resumed tune against an uninterrupted one)."""
        keys = ("step", "cause", "change", "outcome", "levels")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


class TuneRequest(_Model):
    host: str
    profile: str  # the starting profile's name
    preset: str = "default"
    spec: SweepPreset
    objective: str = DEFAULT_OBJECTIVE  # a name in console.jobs.tune_objective.OBJECTIVES
    budget_restarts: int | None = None
    budget_minutes: float | None = None
    repeats: int = 2  # per side of each A/B, interleaved
    target: float | None = None  # objective met: this much (in its unit) at the top level

    @field_validator("objective")
    @classmethod
    def _known(cls, value: str) -> str:
        objective(value)
        return value

    @model_validator(mode="after")
    def _slo_for_goodput(self) -> TuneRequest:
        if self.goal.needs_slo and self.spec.slo is None:
            raise ValueError(f"the {self.objective} objective needs an SLO: pass --slo "
                             "ttft_p99_ms=...,itl_p99_ms=...,e2e_p99_ms=... (or a preset's slo)")
        return self

    @property
    def goal(self) -> Objective:
        return objective(self.objective)

    @property
    def metric(self) -> str:
        return self.goal.label


class TuneState(_Model):
    """Everything a resumed tune needs; saved after every finished A/B."""

    request: TuneRequest
    start: ServerProfile  # the starting profile as configured (what is saved comes from it)
    kept: Change = Change()  # every kept change, merged (the good profile = start + kept)
    ladder: list[Rung] = []
    tried: list[str] = []  # Change.key() of candidates already judged from the current base
    current_run: int | None = None  # the newest full sweep of the good profile
    stale: bool = False  # a change was kept after current_run: sweep the good profile again
    start_run: int | None = None
    start_value: dict[int, float] = {}  # objective per level of the starting profile's sweep
    value: dict[int, float] = {}  # the good profile's, from its newest full sweep
    gain_pct: float = 0.0  # cumulative, from the kept verdicts' deltas
    restarts: int = 0
    minutes: float = 0.0
    status: TuneStatus = "running"
    stop_reason: str = ""
    notes: list[str] = []
    resumed: int = 0
    in_flight: int | None = None  # the step whose A/B had begun when the state was stored
    saved_profile: str | None = None  # where the tuned profile was written

    def good_profile(self) -> ServerProfile:
        return apply(self.start, self.kept)


def apply(base: ServerProfile, change: Change) -> ServerProfile:
    """`base` with `change` (None removes a flag or variable); not validated."""
    flags: dict[str, FlagValue] = dict(base.flags)
    for name, value in change.flags.items():
        flags.pop(name, None)
        if value is not None:
            flags[name] = value
    env = {k: v for k, v in {**base.env, **change.env}.items() if v is not None}
    return base.model_copy(update={"flags": flags, "env": env})


@dataclass(frozen=True)
class TuneProgress:
    stage: TuneStage
    message: str = ""
    rung: Rung | None = None


LADDER_HEADER = ("step", "cause", "change", "verdict (knee)", "outcome", "cum. gain",
                 "restarts", "min")


def ladder_header(state: TuneState) -> tuple[str, ...]:
    """LADDER_HEADER with the verdict naming what it judged ("verdict (knee, output tok/J)")."""
    head = list(LADDER_HEADER)
    head[3] = f"verdict (knee, {state.request.metric})"
    return tuple(head)


def ladder_rows(state: TuneState) -> list[tuple[str, ...]]:
    """Rows for a plain table: step, cause, change, verdict at the knee, cumulative gain,
    restarts, minutes."""
    rows: list[tuple[str, ...]] = [ladder_header(state)]
    for r in state.ladder:
        verdict = (f"{r.delta_pct:+.1f}% \u00b1 {r.half_width_pct:.1f}% at "
                   f"{','.join(map(str, r.levels))}"
                   if r.delta_pct is not None and r.half_width_pct is not None else "-")
        outcome = f"{r.outcome} (resumed)" if r.resumed else r.outcome
        rows.append((str(r.step), r.cause, r.change, verdict, outcome,
                     f"{r.cumulative_pct:+.1f}%", str(r.restarts), f"{r.minutes:.1f}"))
    return rows


def state_json(state: TuneState, tune_id: int | None = None) -> dict[str, Any]:
    data = state.model_dump(mode="json")
    data["id"] = tune_id
    goal = state.request.goal  # what `value`, `start_value` and the deltas are of
    data["objective"] = {"name": goal.name, "label": goal.label, "unit": goal.unit}
    return data
