"""Turn raw observations (log lines, /metrics text, agent samples, the client's step record)
into typed evidence. Pure functions: no I/O, no clock.

Log lines are assigned to a step by when they were read (the collector reads the log at the
end of each step), not by their printed timestamps: the host's clock and timezone need not
match ours, and SGLang prints whole seconds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from console.bench.models import StepResult
from console.diagnose.models import (
    ClientRecord,
    DecodePoint,
    GpuPoint,
    MetricsPoint,
    PrefillPoint,
    StartupFacts,
    StepEvidence,
    Topology,
)
from console.logs.batch_stats import parse_batch_message
from console.logs.line_format import PREFIX
from console.logs.metrics import parse_metrics

# The common 0.5.x shapes in one search each (reference §2.2, §2.3); any other shape (spec
# decoding, hybrid pools, PD, MFU fields) goes through the general key: value parser.
_DECODE_FAST = re.compile(
    r"Decode batch(?: \[\d+\])?, #running-req: (\d+), #token: \d+, token usage: ([\d.]+), "
    r"(?:[^,]+, )*?cuda graph: (True|False), gen throughput \(token/s\): ([\d.]+), "
    r"#queue-req: (\d+)")
_PREFILL_FAST = re.compile(
    r"Prefill batch(?: \[\d+\])?, #new-seq: (\d+), #new-token: (\d+), #cached-token: \d+, "
    r"token usage: ([\d.]+), #running-req: (\d+), #queue-req: (\d+)")
_RETRACT = re.compile(r"KV cache pool is full\. Retract requests\. #retracted_reqs: (\d+)")
_REDUCED = re.compile(r"max_running_requests was reduced from the requested (\d+) to (\d+)")
_CAPTURE_END = re.compile(r"Capture target decode CUDA graph end\. bs=\[([0-9, ]*)\]")
_SCHED_INFO = re.compile(
    r"max_total_num_tokens=(\d+), chunked_prefill_size=(-?\d+), max_prefill_tokens=\d+, "
    r"max_running_requests=(\d+)")
_WARNINGS = {  # substring -> catalogue id (console/logs/catalogue.toml)
    "Using default MoE kernel config": "moe-default-config",
    "KV cache pool is full": "kv-pool-full-retract",
    "max_running_requests was reduced": "max-running-requests-reduced",
    "No valid tactics available for fused moe op": "flashinfer-no-tactics",
    "DeepGemm is enabled but the scale_fmt": "deepgemm-scale-fmt",
    "NaN detected": "nan-detected",
}


def message_of(line: str) -> str:
    """The message part of an SGLang line (the line itself when it has no prefix)."""
    found = PREFIX.match(line)
    return line[found.end():] if found else line


def step_evidence(
    step: StepResult,
    lines: Sequence[str] = (),
    metrics: Sequence[MetricsPoint] = (),
    gpu: Sequence[GpuPoint] = (),
) -> StepEvidence:
    """One step's evidence from the lines read during it and the samples taken in it."""
    decode: list[tuple[Any, ...]] = []
    prefill: list[tuple[Any, ...]] = []
    retract_lines = 0
    retracted = 0
    warnings: list[str] = []
    decode_search, prefill_search = _DECODE_FAST.search, _PREFILL_FAST.search
    for line in lines:
        if "batch" in line:
            found = decode_search(line)
            if found is not None:
                run, usage, graph, gen, queue = found.groups()
                decode.append((int(run), int(queue), float(usage), graph == "True", float(gen)))
                continue
            found = prefill_search(line)
            if found is not None:
                seq, tok, usage, run, queue = found.groups()
                prefill.append((int(seq), int(tok), int(run), int(queue), float(usage)))
                continue
            point = _batch_point(line)  # another shape: the general parser
            if isinstance(point, DecodePoint):
                decode.append(tuple(point))
                continue
            if isinstance(point, PrefillPoint):
                prefill.append(tuple(point))
                continue
        if "KV cache pool is full" in line:
            retract_lines += 1
            found = _RETRACT.search(line)
            retracted += int(found.group(1)) if found else 0
        for needle, ident in _WARNINGS.items():
            if needle in line and ident not in warnings:
                warnings.append(ident)
    window = (step.started_at, step.finished_at)
    return StepEvidence(
        index=step.index,
        concurrency=step.concurrency,
        started_at=step.started_at,
        finished_at=step.finished_at,
        decode_rows=decode,
        prefill_rows=prefill,
        retract_lines=retract_lines,
        retracted_reqs=retracted,
        log_lines=len(lines),
        warnings=warnings,
        metrics=[m for m in metrics if _inside(m.t, window)],
        gpu=[g for g in gpu if _inside(g.t, window)],
        client=client_record(step),
    )


def _inside(t: float, window: tuple[float, float]) -> bool:
    """A sample taken outside the step's window is stale for this step (not evidence)."""
    return window[0] <= t <= window[1] + 0.5


def _batch_point(line: str) -> DecodePoint | PrefillPoint | None:
    if "Decode batch" not in line and "Prefill batch" not in line:
        return None
    stats = parse_batch_message(message_of(line))
    if stats is None or stats.running_reqs is None:
        return None
    if stats.kind == "decode":
        return DecodePoint(stats.running_reqs, stats.queue_reqs or 0, stats.token_usage,
                           stats.cuda_graph, stats.gen_throughput)
    return PrefillPoint(stats.new_seq or 0, stats.new_token or 0, stats.running_reqs,
                        stats.queue_reqs or 0, stats.token_usage)


def client_record(step: StepResult) -> ClientRecord | None:
    m = step.metrics
    if m is None:
        return None
    return ClientRecord(
        target=step.concurrency,
        num_prompts=m.completed + m.errors + m.incomplete,
        completed=m.completed,
        measured_concurrency=m.measured_concurrency,
        client_cpu_max=m.client_cpu_max,
        client_warning=m.client_warning,
        itl_p50_ms=m.itl_ms.p50,
        itl_p99_ms=m.itl_ms.p99,
        itl_mean_ms=m.itl_ms.mean,
        tpot_mean_ms=m.tpot_ms.mean,
        ttft_p50_ms=m.ttft_ms.p50,
        steady_reached=None if m.steady is None else m.steady.reached,
        steady_window_s=None if m.steady is None else m.steady.window_s,
        step_s=None if m.steady is None else m.steady.step_s,
        total_tok_s=m.total_tok_s,
        output_tok_s=m.output_tok_s,
        duration_s=m.duration_s,
    )


METRICS_KEPT = frozenset({  # what the rules read; the rest of the page is not stored
    "sglang:is_cuda_graph", "sglang:num_running_reqs", "sglang:num_queue_reqs",
    "sglang:token_usage", "sglang:gen_throughput", "sglang:num_retracted_reqs",
    "sglang:num_retracted_requests_total", "sglang:max_total_num_tokens",
    "sglang:kv_used_tokens", "sglang:cuda_graph_passes_total",
})


def metrics_point(text: str, t: float) -> MetricsPoint | None:
    """A `/metrics` page as evidence; either prefix (`sglang:` raw, `sglang_` as exporters
    rename it) is read as `sglang:`. None when the page does not parse."""
    normalised = re.sub(r"(?m)^(# (?:HELP|TYPE) )?sglang_", r"\1sglang:", text)
    try:
        snapshot = parse_metrics(normalised)
    except (ValueError, TypeError):
        return None
    values = {k: v for k, v in snapshot.values.items() if k in METRICS_KEPT}
    if not values:
        return None
    return MetricsPoint(t=t, values=values)


def gpu_points(sample: Any, t: float) -> list[GpuPoint]:
    """Per-GPU points from one agent sample (console.gpu.models.GpuSample or a dict)."""
    gpus = getattr(sample, "gpus", None)
    if gpus is None and isinstance(sample, Mapping):
        gpus = sample.get("gpus")
    points: list[GpuPoint] = []
    for gpu in gpus or []:
        get = gpu.get if isinstance(gpu, Mapping) else lambda k, g=gpu: getattr(g, k, None)
        tx, rx = _num(get("pcie_tx_bytes_s")), _num(get("pcie_rx_bytes_s"))
        points.append(GpuPoint(
            t=t,
            index=int(get("index") or 0),
            util=_num(get("util_gpu")),
            power_w=_num(get("power_w")),
            power_limit_w=_num(get("power_limit_w")),
            sm_clock_mhz=_num(get("sm_clock_mhz")),
            sm_clock_max_mhz=_num(get("sm_clock_max_mhz")),
            temp_c=_num(get("temp_c")),
            reasons=[str(r) for r in (get("clock_reasons") or [])],
            pcie_bytes_s=None if tx is None and rx is None else (tx or 0.0) + (rx or 0.0),
        ))
    return points


def _num(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def startup_facts(lines: Iterable[str], server_info: Mapping[str, Any] | None = None,
                  flags: Mapping[str, Any] | None = None) -> StartupFacts:
    """Facts from the startup log lines, then /server_info (resolved values win), then the
    profile's flags."""
    facts: dict[str, Any] = {}
    for line in lines:
        if "Capture target decode CUDA graph end" in line:
            found = _CAPTURE_END.search(line)
            if found:
                facts["capture_bs"] = [int(x) for x in found.group(1).split(",") if x.strip()]
        elif "max_running_requests was reduced" in line:
            found = _REDUCED.search(line)
            if found:
                facts["running_cap_reduced_from"] = int(found.group(1))
                facts["max_running_requests"] = int(found.group(2))
        elif "Using default MoE kernel config" in line:
            facts["moe_untuned_warning"] = message_of(line)[:300]
        elif line.find("max_total_num_tokens=") >= 0:
            found = _SCHED_INFO.search(line)
            if found:
                facts["max_total_num_tokens"] = int(found.group(1))
                facts["chunked_prefill_size"] = int(found.group(2))
                facts["max_running_requests"] = int(found.group(3))
        elif "server_args={" in line:
            facts.update(_from_server_args(_literal(message_of(line)[len("server_args="):])))
    facts.update(_from_server_args(server_info or {}))
    for name, key in (("moe-runner-backend", "moe_runner_backend"),
                      ("quantization", "quantization"), ("kv-cache-dtype", "kv_cache_dtype")):
        if flags and name in flags and key not in facts:
            facts[key] = str(flags[name])
    if flags and "disable-cuda-graph" in flags and flags["disable-cuda-graph"]:
        facts["decode_graph_disabled"] = True
    return StartupFacts(**facts)


def _literal(text: str) -> dict[str, Any]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _from_server_args(sa: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("tp_size", "max_total_num_tokens", "chunked_prefill_size",
                "cuda_graph_max_bs_decode", "mem_fraction_static"):
        value = sa.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value
    for key in ("moe_runner_backend", "quantization", "kv_cache_dtype"):
        if isinstance(sa.get(key), str):
            out[key] = sa[key]
    for key in ("disable_custom_all_reduce", "enable_mixed_chunk"):
        if isinstance(sa.get(key), bool):
            out[key] = sa[key]
    internal = sa.get("internal_states")
    if isinstance(internal, list) and internal and isinstance(internal[0], Mapping):
        effective = internal[0].get("effective_max_running_requests_per_dp")
        if isinstance(effective, int):
            out["max_running_requests"] = effective
    elif isinstance(sa.get("max_running_requests"), int):
        out["max_running_requests"] = sa["max_running_requests"]
    backend = sa.get("cuda_graph_backend_decode")
    if backend == "disabled" or sa.get("disable_cuda_graph") is True:
        out["decode_graph_disabled"] = True
    return out


def topology_of(header: Any) -> Topology:
    """NVLink or not, from the agent's header (console.gpu.models.GpuHeader or a dict)."""
    if header is None:
        return Topology()
    get = header.get if isinstance(header, Mapping) else lambda k: getattr(header, k, None)
    gpus = get("gpus") or []
    first = gpus[0] if gpus else None
    name = (first.get("name") if isinstance(first, Mapping) else getattr(first, "name", None))
    topo = get("topology")
    links = (topo.get("links") if isinstance(topo, Mapping) else getattr(topo, "links", None))
    nvlink: bool | None = None
    if links:
        nvlink = any(str(cell or "").startswith("NV") for row in links for cell in row)
    return Topology(gpu_name=name, num_gpus=len(gpus) or None, nvlink=nvlink,
                    source=str((topo.get("source") if isinstance(topo, Mapping)
                                else getattr(topo, "source", "")) or ""))
