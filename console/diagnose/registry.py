"""The causes' one registry: a rule is registered with its cause id and what it checks.

    @rule("cuda-graph-ceiling", checked="Decode lines: #running-req vs the captured sizes")
    def cuda_graph_ceiling(ev: RunEvidence, ctx: Context) -> Cause | None: ...

Registration fills everything that lists the causes: the rules `diagnose` runs (in the order
they were registered, which breaks ties between equal confidences), the "checked" list of a
"no clear cause" answer, and the stable cause ids (`CAUSE_IDS`). A new cause is one decorated
function in console/diagnose/rules.py plus its row in the README's table (a test checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from console.diagnose.effects import Fit, fit, line_fits
from console.diagnose.models import Cause, KneeInfo, RunEvidence, StepEvidence
from console.logs.ladder import Ladder


@dataclass(frozen=True)
class Context:
    """What every rule reads besides the run's evidence: the knee and the steps to look at."""

    knee: KneeInfo
    late: list[StepEvidence]  # the knee's step and every step above it
    all: list[StepEvidence]
    lines: bool = False  # steps split from a log file: fit on its Decode lines (fit_lines)
    # The decode CUDA-graph ladder against the run's batches, with its proposal
    # (console/diagnose/ladder_facts.py); None without a captured list.
    ladder: Ladder | None = None
    # Fits asked for by several rules, computed once (a long log's fit takes about a second).
    _fits: dict[bool | None, Fit | None] = field(default_factory=dict, compare=False,
                                                 repr=False)

    def fit(self, graph: bool | None) -> Fit | None:
        if graph not in self._fits:
            if self.lines:
                self._fits.update(line_fits(self.all))
            else:
                self._fits[graph] = fit(self.all, graph=graph)
        return self._fits[graph]

    @property
    def graph_fit(self) -> Fit | None:
        return self.fit(True)

    @property
    def any_fit(self) -> Fit | None:
        return self.fit(None)

    @property
    def late_decode(self) -> list[StepEvidence]:
        """The late steps that hold Decode lines; when none does (a log's top level may hold
        only Prefill lines), the highest concurrency that does."""
        late = [s for s in self.late if s.decode_rows]
        if late:
            return late
        held = [s for s in self.all if s.decode_rows]
        return [max(held, key=lambda s: (s.concurrency, s.index))] if held else []


RuleFn = Callable[[RunEvidence, Context], Cause | None]


@dataclass(frozen=True)
class Rule:
    id: str  # the stable cause id (scripts and the console key on it)
    checked: str  # what the rule looks at, said when no cause is clear
    check: RuleFn

    def __call__(self, ev: RunEvidence, ctx: Context) -> Cause | None:
        cause = self.check(ev, ctx)
        if cause is not None and cause.id != self.id:
            raise ValueError(f"rule {self.id!r} returned a cause with id {cause.id!r}")
        return cause


RULES: dict[str, Rule] = {}


def rule(cause_id: str, *, checked: str) -> Callable[[RuleFn], RuleFn]:
    """Register the decorated function as the rule for `cause_id` (ids are unique)."""

    def register(check: RuleFn) -> RuleFn:
        if cause_id in RULES:
            raise ValueError(f"cause id {cause_id!r} is registered twice")
        RULES[cause_id] = Rule(cause_id, checked, check)
        return check

    return register
