"""Turn raw observations (log lines, /metrics text, agent samples, the client's step record)
into typed evidence. Pure functions: no I/O, no clock.

Log lines are assigned to a step by when they were read (the collector reads the log at the
end of each step), not by their printed timestamps: the host's clock and timezone need not
match ours, and SGLang prints whole seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from console.bench.models import StepResult
from console.diagnose.models import (
    ClientRecord,
    GpuFacts,
    GpuPoint,
    MetricsPoint,
    StartupFacts,
    StepEvidence,
)
from console.logs.metrics import parse_metrics
from console.sglang import metrics_names as mn
from console.sglang.batch import (
    DECODE_FAST,
    PREFILL_FAST,
    RETRACT_NEEDLES,
    parse_batch,
    retracted_reqs,
)
from console.sglang.dp import NodeBatches, NodeSample
from console.sglang.metrics_names import normalise_text
from console.sglang.prefix import dp_rank, parse_prefix
from console.sglang.server_args import (
    SERVER_ARGS,
    decode_graph_ceiling,
    decode_graph_disabled,
    parse_server_args,
    requested_running_per_rank,
)
from console.sglang.startup import CaptureSizes, StartupLine, is_decode_phase, parse_startup
from console.sglang.warning_lines import WARNING_IDS


def message_of(line: str) -> str:
    """The message part of an SGLang line, any prefix shape (the line itself without one)."""
    return parse_prefix(line).message


def step_evidence(
    step: StepResult,
    lines: Sequence[str] = (),
    metrics: Sequence[MetricsPoint] = (),
    gpu: Sequence[GpuPoint] = (),
) -> StepEvidence:
    """One step's evidence from the lines read during it and the samples taken in it.

    Batch lines are read by console/sglang/batch.py; with DP ranks each rank's line is a row
    (the per-rank caps and graph ceiling apply per rank) and `node_decode_rows` holds the
    ranks summed per timestamp (console/sglang/dp.py)."""
    decode: list[tuple[Any, ...]] = []
    prefill: list[tuple[Any, ...]] = []
    node = NodeBatches()
    node_rows: list[tuple[Any, ...]] = []
    retract_lines = 0
    retracted = 0
    warnings: list[str] = []
    for line in lines:
        if "batch" in line:
            parsed = _batch_row(line, node, node_rows)
            if parsed is not None:
                (decode if parsed[0] else prefill).append(parsed[1])
                continue
        if any(needle in line for needle in RETRACT_NEEDLES):
            retract_lines += 1
            retracted += retracted_reqs(line) or 0
        for needle, ident in WARNING_IDS.items():
            if needle in line and ident not in warnings:
                warnings.append(ident)
    _node_row(node.flush(), node_rows)
    ranks = sum(1 for k in node.tallies if k)
    window = (step.started_at, step.finished_at)
    return StepEvidence(
        index=step.index,
        concurrency=step.concurrency,
        started_at=step.started_at,
        finished_at=step.finished_at,
        decode_rows=decode,
        prefill_rows=prefill,
        node_decode_rows=node_rows if ranks > 1 else [],
        dp_ranks=ranks,
        retract_lines=retract_lines,
        retracted_reqs=retracted,
        log_lines=len(lines),
        warnings=warnings,
        metrics=[m for m in metrics if _inside(m.t, window)],
        gpu=[g for g in gpu if _inside(g.t, window)],
        client=client_record(step),
    )


def _batch_row(line: str, node: NodeBatches,
               node_rows: list[tuple[Any, ...]]) -> tuple[bool, tuple[Any, ...]] | None:
    """(is decode, row) of a batch line; None for any other line."""
    parsed = batch_line(line)
    if parsed is None:
        return None
    decode, row, timestamp, ranks = parsed
    dp = dp_rank(ranks) if decode and ranks else ""
    if dp:
        running, queue, usage, graph_on, rate = row[:5]
        _node_row(node.add(timestamp, dp, running, queue, rate, usage, graph_on), node_rows)
    return decode, row


BatchLine = tuple[bool, tuple[Any, ...], str | None, str]


def batch_line(line: str) -> BatchLine | None:
    """(is decode, row, timestamp, rank parts) of a batch line; None for any other line.
    Decode rows are (running, queue, token usage, cuda graph, gen throughput[, #prealloc-req
    on a PD decode node]); prefill rows (new seqs, new tokens, running, queue, token usage),
    as StepEvidence stores them."""
    prefix = parse_prefix(line)
    message = prefix.message
    found = DECODE_FAST.match(message)
    if found is not None:
        _it, run, _tok, use, _alen, _arate, graph, gen, queue = found.groups()
        row: tuple[Any, ...] = (int(run), int(queue), float(use), graph == "True", float(gen))
        return True, row, prefix.timestamp, prefix.ranks
    found = PREFILL_FAST.match(message)
    if found is not None:
        _it, seq, tok, _cached, use, run, queue, _pending, _graph, _inp = found.groups()
        return (False, (int(seq), int(tok), int(run), int(queue), float(use)), prefix.timestamp,
                prefix.ranks)
    stats = parse_batch(message)
    if stats is None or stats.running_reqs is None:
        return None
    if stats.kind == "prefill":
        return (False, (stats.new_seq or 0, stats.new_token or 0, stats.running_reqs,
                        stats.queue_reqs or 0, stats.token_usage), prefix.timestamp,
                prefix.ranks)
    row = (stats.running_reqs, stats.queue_reqs or 0, stats.token_usage, stats.cuda_graph,
           stats.gen_throughput)
    if stats.prealloc_reqs is not None:  # a PD decode node: its pool's waiting room
        row = (*row, stats.prealloc_reqs)
    return True, row, prefix.timestamp, prefix.ranks


def _node_row(sample: NodeSample | None, rows: list[tuple[Any, ...]]) -> None:
    if sample is not None:
        rows.append((sample.running, sample.queue, sample.token_usage, sample.cuda_graph,
                     sample.gen_throughput))


def _inside(t: float, window: tuple[float, float]) -> bool:
    """A sample taken outside the step's window is stale for this step (not evidence)."""
    return window[0] <= t <= window[1] + 0.5


def client_record(step: StepResult) -> ClientRecord | None:
    m = step.metrics
    if m is None:
        return None
    return ClientRecord(
        # An open-loop (request-rate) step has no concurrency it holds: target 0.
        target=0 if m.request_rate is not None else step.concurrency,
        num_prompts=m.completed + m.errors + m.incomplete,
        completed=m.completed,
        # 0.0 is StepMetrics' default when the file did not carry it (a sweep JSON's
        # metrics may not): a step that completed requests never held zero streams.
        measured_concurrency=m.measured_concurrency or None,
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
    mn.IS_CUDA_GRAPH, mn.NUM_RUNNING_REQS, mn.NUM_QUEUE_REQS,
    mn.TOKEN_USAGE, mn.GEN_THROUGHPUT, mn.NUM_RETRACTED_REQS,
    mn.NUM_RETRACTED_REQUESTS_TOTAL, mn.MAX_TOTAL_NUM_TOKENS,
    mn.KV_USED_TOKENS, mn.CUDA_GRAPH_PASSES_TOTAL,
})


def metrics_point(text: str, t: float) -> MetricsPoint | None:
    """A `/metrics` page as evidence; either prefix (`sglang:` raw, `sglang_` as exporters
    rename it) is read as `sglang:`. None when the page does not parse."""
    try:
        snapshot = parse_metrics(normalise_text(text))
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


def _ladder_costs(line: StartupLine, facts: dict[str, Any]) -> None:
    """The first decode capture end line's memory and seconds, the first KV pool's size, the
    capture wording (what the ladder's proposal costs: console/logs/ladder_plan.py)."""
    if line.wording and is_decode_phase(line.phase):
        facts.setdefault("capture_wording", line.wording)
    if line.kind == "capture_end" and is_decode_phase(line.phase) \
            and "graph_mem_gb" not in facts:
        if "mem_gb" in line.values:
            facts["graph_mem_gb"] = line.values["mem_gb"]
        if line.elapsed is not None:
            facts["graph_capture_s"] = line.elapsed
    elif line.kind == "kv_allocated" and "kv_gb" in line.values and "tokens" in line.values \
            and "kv_pool_gb" not in facts:
        facts["kv_pool_gb"] = line.values["kv_gb"]
        facts["kv_pool_tokens"] = int(line.values["tokens"])


def startup_facts(lines: Iterable[str], server_info: Mapping[str, Any] | None = None,
                  flags: Mapping[str, Any] | None = None) -> StartupFacts:
    """Facts from the startup log lines (console/sglang/startup.py, server_args.py: every
    release's wording), then /server_info (resolved values win), then the profile's flags."""
    facts: dict[str, Any] = {}
    sizes = CaptureSizes()
    # What the scheduler printed it runs with (the sizing line, a clamp): effective values,
    # which win over server_args' and /server_info's requested ones (SGLang resolves
    # max_running_requests, chunked_prefill_size and the KV pool after server_args is printed:
    # console/sglang/effective.py).
    resolved: dict[str, Any] = {}
    requested_running: int | None = None
    for line in lines:
        message = message_of(line)
        if message.startswith(SERVER_ARGS):
            args = parse_server_args(message)
            if args is not None:
                facts.update(_from_server_args(args))
                requested_running = requested_running_per_rank(args)
            continue
        if "Using default MoE kernel config" in message:
            facts["moe_untuned_warning"] = message[:300]
            continue
        startup = parse_startup(message)
        if startup is None:
            continue
        _ladder_costs(startup, facts)
        if sizes.add(startup):
            # tqdm bars alone may show one size of many: the list only when all are shown
            # (console/sglang/startup.py CaptureSizes), the largest when the first bar is.
            if sizes.sizes is not None:
                facts["capture_bs"] = sizes.sizes
            elif sizes.ceiling is not None:
                facts["cuda_graph_max_bs_decode"] = sizes.ceiling
        elif startup.kind in ("weights_begin", "weights_end"):
            _weights(facts, startup)
        elif startup.kind == "sizing":
            for key in ("max_total_num_tokens", "chunked_prefill_size", "max_running_requests"):
                if key in startup.values:
                    resolved[key] = int(startup.values[key])
        elif startup.kind == "clamp" and startup.name == "max_running_requests":
            # `Max running requests is reset to N` (speculative decoding) has no requested
            # value; `... was reduced from the requested N to M` has both.
            if "requested" in startup.values:
                resolved["running_cap_reduced_from"] = int(startup.values["requested"])
            resolved["max_running_requests"] = int(startup.values["effective"])
    facts.update(_from_server_args(server_info or {}))
    internal = _internal_running(server_info or {})
    facts.update(resolved)
    if internal is not None:
        facts["max_running_requests"] = internal
    effective = facts.get("max_running_requests")
    if (requested_running is not None and isinstance(effective, int)
            and effective < requested_running and "running_cap_reduced_from" not in facts):
        # 0.4.x clamps silently: server_args asked for more than the scheduler runs with.
        facts["running_cap_reduced_from"] = requested_running
    if server_info and isinstance(server_info.get("version"), str):
        facts["sglang_version"] = server_info["version"]
    for name, key in (("moe-runner-backend", "moe_runner_backend"),
                      ("quantization", "quantization"), ("kv-cache-dtype", "kv_cache_dtype")):
        if flags and name in flags and key not in facts:
            facts[key] = str(flags[name])
    if flags and "disable-cuda-graph" in flags and flags["disable-cuda-graph"]:
        facts["decode_graph_disabled"] = True
    return StartupFacts(**facts)


def _weights(facts: dict[str, Any], line: StartupLine) -> None:
    """The first rank's weight lines: free memory before, the weights' size, the arch."""
    key = "avail_gb_before_weights" if line.kind == "weights_begin" else "weights_gb_per_gpu"
    value = line.values.get("avail_gb" if line.kind == "weights_begin" else "usage_gb")
    if value is not None and key not in facts:
        facts[key] = value
    if line.name and "architecture" not in facts:
        facts["architecture"] = line.name


def _from_server_args(sa: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("tp_size", "max_total_num_tokens", "chunked_prefill_size",
                "mem_fraction_static", "dp_size", "attn_dp_size"):
        value = sa.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = value
    if isinstance(sa.get("max_total_tokens"), int) and not isinstance(
            sa.get("max_total_tokens"), bool):
        out["max_total_tokens"] = sa["max_total_tokens"]
    for key in ("moe_runner_backend", "quantization", "kv_cache_dtype"):
        if isinstance(sa.get(key), str):
            out[key] = sa[key]
    for key in ("disable_custom_all_reduce", "enable_mixed_chunk"):
        if isinstance(sa.get(key), bool):
            out[key] = sa[key]
    effective = _internal_running(sa)
    if effective is not None:
        out["max_running_requests"] = effective
    elif isinstance(sa.get("max_running_requests"), int):
        out["max_running_requests"] = sa["max_running_requests"]
    ceiling = decode_graph_ceiling(sa)  # whichever field this version has
    if ceiling is not None:
        out["cuda_graph_max_bs_decode"] = ceiling
    if decode_graph_disabled(sa):
        out["decode_graph_disabled"] = True
    return out


def _internal_running(sa: Mapping[str, Any]) -> int | None:
    """/server_info's `internal_states[0].effective_max_running_requests_per_dp` (0.5.x)."""
    internal = sa.get("internal_states")
    if isinstance(internal, list) and internal and isinstance(internal[0], Mapping):
        effective = internal[0].get("effective_max_running_requests_per_dp")
        if isinstance(effective, int) and not isinstance(effective, bool):
            return effective
    return None


def topology_of(header: Any) -> GpuFacts:
    """NVLink or not, from the agent's header (console.gpu.models.GpuHeader or a dict)."""
    if header is None:
        return GpuFacts()
    get: Callable[[str], Any] = (header.get if isinstance(header, Mapping)
                                 else lambda k: getattr(header, k, None))
    gpus = get("gpus") or []
    first = gpus[0] if gpus else None
    name = (first.get("name") if isinstance(first, Mapping) else getattr(first, "name", None))
    topo = get("topology")
    links = (topo.get("links") if isinstance(topo, Mapping) else getattr(topo, "links", None))
    nvlink: bool | None = None
    if links:
        nvlink = any(str(cell or "").startswith("NV") for row in links for cell in row)
    return GpuFacts(gpu_name=name, num_gpus=len(gpus) or None, nvlink=nvlink,
                    source=str((topo.get("source") if isinstance(topo, Mapping)
                                else getattr(topo, "source", "")) or ""),
                    driver_version=_text(get("driver_version")),
                    cuda_version=_text(get("cuda_version")))


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None
