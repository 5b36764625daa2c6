"""Latency SLOs: per-request attainment, goodput, and the highest concurrency that meets them.

Goodput is counted exactly as SGLang 0.5.23's bench_serving counts it
(python/sglang/benchmark/goodput.py `calculate_goodput`, called from
python/sglang/benchmark/serving.py `benchmark()` with `dur_s=benchmark_duration` when
`--goodput ttft:MS tpot:MS e2el:MS` is given):
- a request is good when it succeeded and each given objective holds for it: its TTFT, its
  TPOT `(latency - ttft) / (output_len - 1)` (0 for a one-token reply) and its end-to-end
  latency, each at or under the objective (`observed_ms[name] <= slo`);
- goodput = good requests / the run's duration (requests per second);
- attainment = good requests / every request sent (failed ones included).
Plateau's `itl_p99_ms` objective is checked per request against that TPOT (a request has one
inter-token figure: its mean gap, bench_serving's `tpot`), and per step against the step's ITL
p99. The step's duration is the one its request/s uses (first request's start to the last one's
end, or the time box), bench_serving's `benchmark_duration` being the same span seen from its
own gather().
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from console.bench.metrics import NS_PER_MS, RequestRecord
from console.bench.models import SloResult, StepMetrics, StepResult
from console.config_models import SloSpec

SLO_KEYS = ("ttft_p99_ms", "itl_p99_ms", "e2e_p99_ms")
# Plateau's objective -> bench_serving's --goodput key (benchmark/goodput.py GOODPUT_SLO_METRICS).
BENCH_SERVING_KEYS = {"ttft_p99_ms": "ttft", "itl_p99_ms": "tpot", "e2e_p99_ms": "e2el"}
_WORDS = {"ttft_p99_ms": "TTFT p99", "itl_p99_ms": "ITL p99", "e2e_p99_ms": "E2E p99"}


class SloSyntaxError(ValueError):
    """A malformed --slo value; the message is one line naming the key."""


def parse_slo(text: str) -> SloSpec:
    """`ttft_p99_ms=500,itl_p99_ms=50,e2e_p99_ms=20000` as an SloSpec."""
    values: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, raw = (s.strip() for s in part.partition("="))
        if key not in SLO_KEYS:
            raise SloSyntaxError(f"unknown SLO key {key!r} (known: {', '.join(SLO_KEYS)})")
        if not sep or not raw:
            raise SloSyntaxError(f"SLO key {key} needs a value in milliseconds: {key}=MS")
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise SloSyntaxError(
                f"SLO key {key}: expected a positive number of milliseconds, got {raw!r}"
            )
        if key in values:
            raise SloSyntaxError(f"SLO key {key} is given twice")
        values[key] = value
    if not values:
        raise SloSyntaxError(f"an SLO needs at least one of {', '.join(SLO_KEYS)}")
    return SloSpec(**values)


def objectives(slo: SloSpec) -> dict[str, float]:
    """The objectives that are set, by key."""
    return {k: v for k, v in slo.model_dump().items() if v is not None}


def slo_text(slo: SloSpec | dict[str, float]) -> str:
    """`TTFT p99 <= 500 ms, ITL p99 <= 50 ms`."""
    given = objectives(slo) if isinstance(slo, SloSpec) else slo
    return ", ".join(f"{_WORDS.get(k, k)} \u2264 {v:g} ms" for k, v in given.items())


def request_values_ms(record: RequestRecord) -> dict[str, float] | None:
    """The request's TTFT, TPOT and end-to-end latency (ms) as bench_serving's goodput reads
    them; None for a request that did not succeed."""
    if not record.ok:
        return None
    e2e = (record.end_ns - record.start_ns) / NS_PER_MS
    ttft_ns = record.ttft_ns
    ttft = ttft_ns / NS_PER_MS if ttft_ns is not None else math.inf
    tpot = (e2e - ttft) / (record.output_tokens - 1) if record.output_tokens > 1 else 0.0
    return {"ttft_p99_ms": ttft, "itl_p99_ms": tpot, "e2e_p99_ms": e2e}


def attainment(records: Sequence[RequestRecord], slo: SloSpec, duration_s: float) -> SloResult:
    """The step's SLO attainment and goodput from its per-request records."""
    given = objectives(slo)
    met = dict.fromkeys(given, 0)
    good = 0
    for record in records:
        values = request_values_ms(record)
        if values is None:
            continue
        passed = [k for k, limit in given.items() if values[k] <= limit]
        for key in passed:
            met[key] += 1
        good += len(passed) == len(given)
    sent = len(records)
    share = good / sent if sent else 0.0
    rate = good / duration_s if duration_s > 0 else 0.0
    return SloResult(slo_ms=given, sent=sent, good=good, met=met, share=share, goodput_rps=rate)


def goodput_argv(slo: SloSpec | None) -> list[str]:
    """bench_serving's `--goodput ttft:MS tpot:MS e2el:MS` for the same objectives."""
    if slo is None:
        return []
    pairs = [f"{BENCH_SERVING_KEYS[k]}:{v:g}" for k, v in objectives(slo).items()]
    return ["--goodput", *pairs]


def from_bench_serving(record: dict[str, object], slo: SloSpec | None, sent: int,
                       duration_s: float) -> SloResult | None:
    """bench_serving's own goodput fields (`request_goodput`, `slo_attainment`,
    `slo_attainment_by_metric`: GoodputMetrics in benchmark/goodput.py) as an SloResult."""
    rate = record.get("request_goodput")
    if slo is None or not isinstance(rate, int | float):
        return None
    given = objectives(slo)
    share = record.get("slo_attainment")
    by_metric = record.get("slo_attainment_by_metric")
    by_metric = by_metric if isinstance(by_metric, dict) else {}
    met = {k: round(float(by_metric.get(BENCH_SERVING_KEYS[k], 0.0)) * sent) for k in given}
    return SloResult(
        slo_ms=given,
        sent=sent,
        good=round(float(rate) * duration_s),
        met=met,
        share=float(share) if isinstance(share, int | float) else 0.0,
        goodput_rps=float(rate),
    )


# ------------------------------------------------------------------- step p99s and the SLO knee


def step_p99s(metrics: StepMetrics) -> dict[str, float | None]:
    return {
        "ttft_p99_ms": metrics.ttft_ms.p99,
        "itl_p99_ms": metrics.itl_ms.p99,
        "e2e_p99_ms": metrics.e2e_ms.p99,
    }


def misses(p99s: dict[str, float | None], slo: SloSpec | dict[str, float]) -> list[str]:
    """The objectives a step's p99s miss, in words (`TTFT p99 812 ms > 500 ms`); a p99 the
    step has not got counts as missed (nothing shows it held)."""
    given = objectives(slo) if isinstance(slo, SloSpec) else slo
    out = []
    for key, limit in given.items():
        value = p99s.get(key)
        if value is None:
            out.append(f"{_WORDS[key]} not measured")
        elif value > limit:
            out.append(f"{_WORDS[key]} {value:,.0f} ms > {limit:g} ms")
    return out


@dataclass(frozen=True)
class SloKnee:
    kind: Literal["meets-all", "meets", "misses", "insufficient"]
    concurrency: int | None  # the highest level meeting the SLO (every level below it too)
    first_miss: int | None
    sentence: str


def _mean_p99s(steps: Iterable[StepResult]) -> dict[int, dict[str, float | None]]:
    """Per concurrency, each p99 averaged over its ok repeats."""
    grouped: dict[int, list[dict[str, float | None]]] = defaultdict(list)
    for step in steps:
        if step.status == "ok" and step.metrics is not None:
            grouped[step.concurrency].append(step_p99s(step.metrics))
    out: dict[int, dict[str, float | None]] = {}
    for concurrency, rows in grouped.items():
        out[concurrency] = {}
        for key in SLO_KEYS:
            values = [r[key] for r in rows if r[key] is not None]
            out[concurrency][key] = sum(values) / len(values) if values else None  # type: ignore[arg-type]
    return out


def slo_knee(steps: Sequence[StepResult], slo: SloSpec | dict[str, float]) -> SloKnee:
    """The highest concurrency up to which every level's p99s meet the SLO, said in words:
    "meets the SLO up to 48; at 64 TTFT p99 812 ms > 500 ms"."""
    curve = _mean_p99s(steps)
    if not curve:
        return SloKnee("insufficient", None, None, "no measured step to check the SLO on")
    best: int | None = None
    for concurrency in sorted(curve):
        missed = misses(curve[concurrency], slo)
        if missed:
            why = "; ".join(missed)
            if best is None:
                return SloKnee("misses", None, concurrency,
                               f"misses the SLO from {concurrency} ({why})")
            return SloKnee("meets", best, concurrency,
                           f"meets the SLO up to {best}; at {concurrency} {why}")
        best = concurrency
    return SloKnee("meets-all", best, None, f"meets the SLO at every level (up to {best})")
