"""`plateau layout`: an interleaved duel of parallel layouts on one host (issue 39), on the
tuner's bench (console.jobs.tune_bench: the CLI's HostBench restarts and sweeps through the
server lifecycle and the sweep job, as `plateau ab` does; a test's runs the simulator on its
virtual clock).

    result = await run_layout(bench, request, profile, store=store)

Rounds of passes, each layout once per round in the same order (the current one first), a
launch per pass, so drift and launch-to-launch differences land on every layout alike (as
`plateau ab --interleave`, console.bench.abplan). The first pass of the current layout says
what the model needs (the weight lines, its architecture, the version): the challengers are
planned from it (console.jobs.layout_plan), and a layout whose weights cannot fit is refused
before it is launched. Each layout's repeats are one stored run; each challenger is judged
against the current layout by the A/B verdict (console.bench.verdict) and stored as an A/B
pair with the layout's figures, so `history`, `compare`, `report` and `export` show it.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from console.bench.models import StepResult
from console.bench.verdict import Verdict, judge
from console.config_models import ServerProfile, SweepPreset
from console.diagnose.models import StartupFacts
from console.jobs.layout_plan import (
    KNOWN_KINDS,
    Facts,
    Layout,
    allreduce_share,
    fits,
    plan,
    shape_of,
)
from console.jobs.tune_bench import CandidateFailed, TuneBench
from console.store.db import RunStore


@dataclass(frozen=True)
class LayoutRequest:
    host: str
    profile: str
    spec: SweepPreset
    repeats: int = 2
    kinds: tuple[str, ...] = KNOWN_KINDS


@dataclass
class LayoutOutcome:
    """One layout's measurements (or why it did not run)."""

    layout: Layout
    run_id: int | None = None
    steps: list[StepResult] = field(default_factory=list)
    fits: bool | None = None
    fit_text: str = ""
    refused: str = ""  # why it was not launched / failed
    kv_tokens_per_replica: int | None = None
    verdict: Verdict | None = None  # against the current layout
    pair_id: int | None = None

    def mean_at(self, level: int, key: Callable[[StepResult], float | None]) -> float | None:
        values = [v for s in self.steps if s.concurrency == level and s.status == "ok"
                  and (v := key(s)) is not None]
        return statistics.fmean(values) if values else None


@dataclass
class LayoutResult:
    request: LayoutRequest
    outcomes: list[LayoutOutcome]
    skipped: dict[str, str]
    facts: Facts
    best: str = ""  # the winning layout's name (the current one when nothing beat it)
    sentence: str = ""  # the verdict: best layout with its interval against the current one
    cause: str = ""  # why, in one sentence

    @property
    def current(self) -> LayoutOutcome:
        return self.outcomes[0]


def _total(step: StepResult) -> float | None:
    return step.metrics.total_tok_s if step.metrics else None


def _itl(step: StepResult) -> float | None:
    return step.metrics.itl_ms.p50 if step.metrics else None


def _ttft(step: StepResult) -> float | None:
    return step.metrics.ttft_ms.p50 if step.metrics else None


METRICS: dict[str, Callable[[StepResult], float | None]] = {
    "total_tok_s": _total, "ttft_p50_ms": _ttft, "itl_p50_ms": _itl}


def facts_from(startup: StartupFacts, profile: ServerProfile, nvlink: bool | None) -> Facts:
    sim_arch = profile.flags.get("sim-arch")
    return Facts(
        weights_gb_per_gpu=startup.weights_gb_per_gpu,
        avail_gb=startup.avail_gb_before_weights,
        architecture=startup.architecture or (str(sim_arch) if sim_arch else None),
        version=startup.sglang_version,
        nvlink=nvlink,
        num_layers=startup.num_layers,
        p2p_disabled=profile.env.get("NCCL_P2P_DISABLE", "").strip() in ("1", "true", "yes"),
    )


def share_at_top(outcome: LayoutOutcome, facts: Facts, levels: Sequence[int]) -> float | None:
    """The all-reduce share of this layout's decode step at the top level it measured."""
    for level in sorted(levels, reverse=True):
        step_ms = outcome.mean_at(level, _itl)
        if step_ms:
            return allreduce_share(outcome.layout.shape, facts, step_ms)
    return None


class _Duel:
    def __init__(self, bench: TuneBench, request: LayoutRequest, profile: ServerProfile,
                 store: RunStore, say: Callable[[str], None],
                 measured_us: dict[int, float]) -> None:
        self.bench = bench
        self.measured_us = measured_us
        self.request = request
        self.profile = profile
        self.store = store
        self.say = say
        self.launches = 0

    async def measure(self, outcome: LayoutOutcome, repeat: int) -> None:
        layout = outcome.layout
        self.launches += 1
        self.say(f"round {repeat + 1}/{self.request.repeats}: {layout.name} "
                 f"({layout.shape.text})")
        try:
            await self.bench.restart(layout.name, layout.profile, f"layout:{layout.name}:{repeat}")
            got = await self.bench.sweep(
                layout.name, layout.profile, self.request.spec.model_copy(update={"repeats": 1}),
                label=f"layout {layout.shape.text} ({self.request.profile})",
                run_id=outcome.run_id, repeat_base=repeat,
                finish=repeat == self.request.repeats - 1)
        except CandidateFailed as exc:
            outcome.refused = str(exc)
            return
        if outcome.run_id is None and got.run_id is not None:
            self._note_probe(got.run_id)
        outcome.run_id = outcome.run_id or got.run_id
        outcome.steps.extend(got.steps)
        if outcome.kv_tokens_per_replica is None and outcome.run_id is not None:
            evidence = self.store.load_evidence(outcome.run_id)
            if evidence is not None:
                outcome.kv_tokens_per_replica = evidence.startup.max_total_num_tokens

    def _note_probe(self, run_id: int) -> None:
        """The probe's figures join the run's topology facts, so its diagnosis (the
        `tp-allreduce-pcie` rule) reads measured latencies instead of its priors."""
        evidence = self.store.load_evidence(run_id) if self.measured_us else None
        if evidence is not None:
            topology = evidence.topology.model_copy(update={"allreduce_us": self.measured_us})
            self.store.save_run_evidence(run_id, evidence.model_copy(
                update={"topology": topology}))

    def first_facts(self, current: LayoutOutcome) -> Facts:
        evidence = None if current.run_id is None else self.store.load_evidence(current.run_id)
        startup = evidence.startup if evidence is not None else StartupFacts()
        nvlink = evidence.topology.nvlink if evidence is not None else None
        return facts_from(startup, self.profile, nvlink)


async def run_layout(bench: TuneBench, request: LayoutRequest, profile: ServerProfile, *,
                     store: RunStore, say: Callable[[str], None] = lambda _t: None,
                     measured_us: dict[int, float] | None = None) -> LayoutResult:
    """`measured_us`: the all-reduce probe's NCCL figures per GPU count (else the priors)."""
    duel = _Duel(bench, request, profile, store, say, dict(measured_us or {}))
    async with bench.lease(f"layout duel of {request.profile}"):
        now = shape_of(profile.flags)
        current = LayoutOutcome(plan(request.profile, profile, Facts(), ()).layouts[0],
                                fits=True, fit_text="the profile as it runs")
        await duel.measure(current, 0)
        if current.refused:
            raise CandidateFailed(f"the current layout {now.text}: {current.refused}")
        facts = replace(duel.first_facts(current), measured_us=dict(measured_us or {}))
        planned = plan(request.profile, profile, facts, request.kinds)
        outcomes = [current]
        mem = profile.flags.get("mem-fraction-static")
        for layout in planned.layouts[1:]:
            ok, said = fits(layout, now, facts, float(mem) if isinstance(mem, int | float)
                            else None)
            outcome = LayoutOutcome(layout, fits=ok, fit_text=said)
            if ok is False:
                outcome.refused = f"does not fit: {said}"
                say(f"{layout.name} ({layout.shape.text}) refused before launch: {said}")
            else:
                problem = await _problem(bench, profile, layout)
                outcome.refused = problem
            outcomes.append(outcome)
        live = [o for o in outcomes[1:] if not o.refused]
        for repeat in range(request.repeats):
            for outcome in ([current] if repeat else []) + live:
                if not outcome.refused:
                    await duel.measure(outcome, repeat)
        # the current one leads each round; its first pass ran before the plan
        result = LayoutResult(request, outcomes, planned.skipped, facts)
        _judge(result, store)
        if live:  # the host as it was: the current layout running (its last pass was not)
            await bench.restart(current.layout.name, profile, "layout:leave-current")
        return result


async def _problem(bench: TuneBench, base: ServerProfile, layout: Layout) -> str:
    """The host's flags editor's objection to the layout's profile ("" when none)."""
    checked, problems = await bench.check(base, layout.change)
    return "" if checked is not None else "; ".join(problems) or "rejected"


def _judge(result: LayoutResult, store: RunStore) -> None:
    current = result.current
    levels = result.request.spec.concurrency
    best: tuple[float, LayoutOutcome] | None = None
    for outcome in result.outcomes[1:]:
        if outcome.refused or not outcome.steps:
            continue
        verdict = judge(current.steps, outcome.steps, label_a=current.layout.name,
                        label_b=outcome.layout.name, interleaved=True)
        outcome.verdict = verdict
        if current.run_id is not None and outcome.run_id is not None:
            outcome.pair_id = store.save_pair(current.run_id, outcome.run_id,
                                              _record(result, outcome, verdict))
        top = verdict.point(max(levels)) if levels else None
        if top is not None and top.word == "better" and (best is None or top.delta_pct > best[0]):
            best = (top.delta_pct, outcome)
    _conclude(result, best[1] if best else None)


def _record(result: LayoutResult, outcome: LayoutOutcome, verdict: Verdict) -> dict[str, Any]:
    """What the A/B pair stores: the verdict as `plateau ab` stores it, and the layouts."""
    return {
        "verdict": verdict.model_dump(mode="json"), "sentence": verdict.sentence,
        "name_a": verdict.label_a, "name_b": verdict.label_b,
        "repeats": result.request.repeats, "interleaved": True,
        "preset": "layout duel", "flags": [[k, "", str(v)] for k, v in
                                           outcome.layout.change.flags.items()],
        "layout": {"a": result.current.layout.shape.text, "b": outcome.layout.shape.text},
    }


def _conclude(result: LayoutResult, winner: LayoutOutcome | None) -> None:
    levels = result.request.spec.concurrency
    current = result.current
    facts = result.facts
    share_now = share_at_top(current, facts, levels)
    if winner is None or winner.verdict is None:
        result.best = current.layout.name
        result.sentence = (f"keep {current.layout.shape.text}: no layout beat it at "
                           f"{max(levels)} beyond the noise")
        result.cause = _why_none(result, share_now)
        return
    top = winner.verdict.point(max(levels))
    assert top is not None
    result.best = winner.layout.name
    result.sentence = (f"{winner.layout.shape.text} {top.interval} total tok/s against "
                       f"{current.layout.shape.text} at {top.concurrency}: better")
    share_best = share_at_top(winner, facts, levels)
    result.cause = (
        f"{current.layout.shape.text} spends {_pct(share_now)} of its decode step in "
        f"all-reduces ({_path_text(facts)}); {winner.layout.shape.text} "
        f"{_how(winner.layout)} and spends {_pct(share_best)}")


def _how(layout: Layout) -> str:
    shape = layout.shape
    if layout.kind == "dp":
        return f"all-reduces over {shape.tp} GPUs instead of {shape.tp * 2}"
    if layout.kind == "attn-dp":
        return "trades each attention all-reduce for gathers of its own requests"
    return "runs the custom all-reduce" if shape.custom_ar else "runs NCCL"


def _why_none(result: LayoutResult, share_now: float | None) -> str:
    refused = [f"{o.layout.shape.text} {o.refused}" for o in result.outcomes[1:] if o.refused]
    if share_now is not None and share_now < 0.15:
        return (f"all-reduces are only {_pct(share_now)} of the decode step: a layout has "
                "little to win" + (f" ({'; '.join(refused)})" if refused else ""))
    return "; ".join(refused) or "the challengers were within the noise of the current layout"


def _path_text(facts: Facts) -> str:
    if facts.nvlink:
        return "over NVLink"
    return "NCCL through host memory, NCCL_P2P_DISABLE=1" if facts.p2p_disabled else \
        "NCCL over PCIe"


def _pct(share: float | None) -> str:
    return "?" if share is None else f"{share * 100:.0f}%"


def layout_json(result: LayoutResult) -> dict[str, Any]:
    levels = result.request.spec.concurrency
    rows = []
    for o in result.outcomes:
        per_level = {}
        for level in levels:
            total = o.mean_at(level, _total)
            per_level[str(level)] = {
                "total_tok_s": total,
                "per_gpu_tok_s": None if total is None else total / o.layout.shape.gpus,
                "ttft_p50_ms": o.mean_at(level, _ttft), "itl_p50_ms": o.mean_at(level, _itl)}
        top = o.verdict.point(max(levels)) if o.verdict and levels else None
        rows.append({
            "name": o.layout.name, "kind": o.layout.kind, "layout": o.layout.shape.text,
            "gpus": o.layout.shape.gpus, "flags": o.layout.change.flags, "run": o.run_id,
            "pair": o.pair_id, "fits": o.fits, "fit": o.fit_text, "refused": o.refused or None,
            "kv_tokens_per_replica": o.kv_tokens_per_replica,
            "replicas": o.layout.shape.dp * o.layout.shape.attn_dp,
            "allreduce_share": share_at_top(o, result.facts, levels),
            "levels": per_level,
            "verdict": None if top is None else {"delta_pct": top.delta_pct,
                                                 "half_width_pct": top.half_width_pct,
                                                 "word": top.word,
                                                 "sentence": o.verdict.sentence
                                                 if o.verdict else ""}})
    return {"host": result.request.host, "profile": result.request.profile,
            "concurrency": list(levels), "repeats": result.request.repeats,
            "layouts": rows, "skipped": result.skipped, "best": result.best,
            "verdict": result.sentence, "cause": result.cause,
            "allreduce_source": (
                "measured by the all-reduce probe (NCCL per GPU count)" if result.facts.measured_us
                else "priors (console/diagnose/rules.py) over the measured step times"),
            "architecture": result.facts.architecture, "version": result.facts.version}


__all__ = ["LayoutOutcome", "LayoutRequest", "LayoutResult", "layout_json", "run_layout"]
