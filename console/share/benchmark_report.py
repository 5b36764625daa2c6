"""A run as llm-d's Benchmark Report, schema v0.2.1: one report per sweep step (a report
describes one benchmark stage; llm-d's own converter writes one per stage too).

The field names, units and required fields follow the published package
`llmd-benchmark-report` 0.2.1 (PyPI; source github.com/llm-d/llm-d-benchmark, module
`llmd_benchmark_report/schema_v0_2.py` and `br_v0_2_json_schema.json`); the tests validate
every report against both. Units are the schema's enum values: "ms", "ms/token",
"tokens/s", "queries/s", "count", "percent", "Watts". Durations are ISO 8601 ("PT12.5S").
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from console import __version__
from console.bench.models import Distribution, StepMetrics, StepResult
from console.diagnose.models import RunEvidence
from console.share.levels import gpu_step
from console.store.models import RunRecord
from console.text import sanitize

VERSION = "0.2.1"
COMPONENT = "sglang-0"
_NS = uuid.UUID("5b0a4c3e-8f0e-4d3a-9a63-1f0c2a7d9e41")  # plateau's namespace for run ids


def _hash(data: Any) -> str:
    return hashlib.md5(json.dumps(data, sort_keys=True, default=str).encode(),
                       usedforsecurity=False).hexdigest()


def _time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stats(dist: Distribution, units: str) -> dict[str, Any] | None:
    if dist.mean is None:
        return None
    out: dict[str, Any] = {"units": units, "mean": dist.mean}
    out.update({k: v for k in ("p50", "p90", "p99") if (v := getattr(dist, k)) is not None})
    return out


def _rate(value: float, units: str) -> dict[str, Any]:
    return {"units": units, "mean": value}


def _seq_len(spec: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = spec.get(key)
    if not isinstance(value, int) or value < 0:
        return None
    ratio = spec.get("range_ratio", 1.0)
    if isinstance(ratio, int | float) and ratio < 1.0:
        return {"distribution": "uniform", "value": value, "min": max(int(value * ratio), 1),
                "max": max(value, 1)}
    return {"distribution": "fixed", "value": value}


def _engine(run: RunRecord, evidence: RunEvidence | None) -> dict[str, Any]:
    meta = run.summary.meta
    info = meta.server_info or {}
    topo = evidence.topology if evidence is not None else None
    tp = (evidence.startup.tp_size if evidence is not None else None) or info.get("tp_size")
    standardized = {
        "kind": "inference_engine", "tool": "sglang",
        "tool_version": sanitize(meta.server_version) or "unknown", "role": "replica",
        "replicas": 1,
        "model": {"name": sanitize(str(info.get("model_path") or "unknown"))},
        "accelerator": {
            "model": sanitize(topo.gpu_name) if topo and topo.gpu_name else "unknown",
            "count": (topo.num_gpus if topo and topo.num_gpus else 0),
            "parallelism": {"tp": int(tp) if isinstance(tp, int) and tp > 0 else 1},
        },
    }
    native: dict[str, Any] = {"args": {f"--{k}": v for k, v in meta.flags.items()}}
    if evidence is not None and evidence.env:
        native["envars"] = dict(evidence.env)
    return {"metadata": {"schema_version": "0.0.1", "label": COMPONENT,
                         "cfg_id": _hash(native)},
            "standardized": standardized, "native": native}


def _load(run: RunRecord, step: StepResult, metrics: StepMetrics | None) -> dict[str, Any]:
    spec = dict(run.summary.meta.spec)
    standardized: dict[str, Any] = {
        "tool": "plateau", "tool_version": __version__,
        "parallelism": max(1, metrics.workers if metrics else 1),
        "source": "random", "stage": step.index,
        "input_seq_len": _seq_len(spec, "input_len") or {"distribution": "other", "value": 0},
        "concurrency": max(1, step.concurrency),
    }
    output = _seq_len(spec, "output_len")
    if output is not None:
        standardized["output_seq_len"] = output
    return {"metadata": {"schema_version": "0.0.1", "cfg_id": _hash(spec),
                         "description": f"plateau sweep step {step.index} (repeat "
                                        f"{step.repeat}) at concurrency {step.concurrency}"},
            "standardized": standardized, "native": {"args": spec}}


def _performance(m: StepMetrics) -> dict[str, Any]:
    latency = {k: v for k, v in (
        ("time_to_first_token", _stats(m.ttft_ms, "ms")),
        ("time_per_output_token", _stats(m.tpot_ms, "ms/token")),
        ("inter_token_latency", _stats(m.itl_ms, "ms/token")),
        ("request_latency", _stats(m.e2e_ms, "ms"))) if v is not None}
    return {"aggregate": {
        "requests": {"total": m.completed + m.errors + m.incomplete, "failures": m.errors,
                     "incomplete": m.incomplete},
        "latency": latency,
        "throughput": {
            "input_token_rate": _rate(m.input_tok_s, "tokens/s"),
            "output_token_rate": _rate(m.headline_output_tok_s(), "tokens/s"),
            "total_token_rate": _rate(m.headline_total_tok_s(), "tokens/s"),
            "request_rate": _rate(m.request_per_s, "queries/s"),
        },
    }}


def _observability(evidence: RunEvidence | None, index: int) -> dict[str, Any] | None:
    step = next((s for s in evidence.steps if s.index == index), None) if evidence else None
    gpu = gpu_step(step) if step is not None else None
    if gpu is None:
        return None
    aggregate = {}
    if gpu.util_pct is not None:
        aggregate["gpu_utilization"] = {"units": "percent", "mean": gpu.util_pct}
    if gpu.power_w is not None:
        aggregate["power_consumption"] = {"units": "Watts", "mean": gpu.power_w}
    if not aggregate:
        return None
    return {"components": [{"component_label": COMPONENT, "aggregate": aggregate}]}


def step_report(run: RunRecord, evidence: RunEvidence | None, step: StepResult
                ) -> dict[str, Any]:
    experiment = f"plateau:{run.summary.started_at!r}:{run.id}"
    duration = max(0.0, step.finished_at - step.started_at)
    report: dict[str, Any] = {
        "version": VERSION,
        "run": {
            "uid": uuid.uuid5(_NS, f"{experiment}:{step.index}").hex,
            "eid": uuid.uuid5(_NS, experiment).hex,
            "description": sanitize(f"{run.label} [plateau run {run.id}]"),
        },
        "scenario": {"stack": [_engine(run, evidence)],
                     "load": _load(run, step, step.metrics)},
        "results": {},
    }
    if step.started_at > 0:
        report["run"]["time"] = {"start": _time(step.started_at),
                                 "end": _time(max(step.finished_at, step.started_at)),
                                 "duration": f"PT{duration:.3f}S"}
    if step.metrics is not None:
        report["results"]["request_performance"] = _performance(step.metrics)
    observability = _observability(evidence, step.index)
    if observability is not None:
        report["results"]["observability"] = observability
    return report


def benchmark_reports(run: RunRecord, evidence: RunEvidence | None) -> list[dict[str, Any]]:
    """One Benchmark Report (as a JSON-ready dict) per stored step, in step order."""
    return [step_report(run, evidence, step) for step in run.steps]
