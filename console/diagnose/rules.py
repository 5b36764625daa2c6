"""One rule per cause id: each reads the run's evidence and returns a Cause or None.

Cause ids are stable (scripts and the console key on them). The mechanisms and their sources
are in shared/reference/plateau-causes.md; the thresholds are ours and documented per rule.
Rules look at the saturated region (the knee's step and those after it) unless said otherwise.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from console.diagnose.models import (
    Cause,
    DecodePoint,
    EvidenceItem,
    KneeInfo,
    RunEvidence,
    StepEvidence,
    Suggestion,
)
from console.sglang.flags import graph_max_bs_flag

CAUSE_IDS = (
    "cuda-graph-ceiling", "eager-decode", "running-cap", "kv-cache-full",
    "prefill-interference", "tp-allreduce-pcie", "power-cap", "thermal", "moe-untuned",
    "client-bound", "too-few-prompts",
)
EAGER_SHARE = 0.5  # share of Decode lines with `cuda graph: False` that counts as eager
FULL_USAGE = 0.95  # token usage that counts as a full KV pool
PCIE_SLOW_UTIL = 80.0  # GPU utilisation (%) below which the GPUs wait on communication


@dataclass(frozen=True)
class Context:
    knee: KneeInfo
    late: list[StepEvidence]  # the knee's step and every step above it
    all: list[StepEvidence]


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _window(step: StepEvidence) -> str:
    return f"step c={step.concurrency} ({_clock(step.started_at)}\u2013{_clock(step.finished_at)})"


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


def _pct(share: float) -> str:
    return f"{share * 100:.0f}%"


def _eager_share(points: Sequence[DecodePoint]) -> float:
    known = [p for p in points if p.cuda_graph is not None]
    return sum(1 for p in known if not p.cuda_graph) / len(known) if known else 0.0


def _step_time(points: Sequence[DecodePoint]) -> float | None:
    """Seconds per decode step: #running-req / gen throughput, median over the lines."""
    times = [p.running / p.gen_throughput for p in points if p.gen_throughput]
    return _median(times) if times else None


def _metric_share(step: StepEvidence, name: str, test: Callable[[float], bool]) -> tuple[int, int]:
    values = [m.values[name] for m in step.metrics if name in m.values]
    return sum(1 for v in values if test(v)), len(values)


# ------------------------------------------------------------------------------ graph


def graph_ceiling(ev: RunEvidence) -> int | None:
    facts = ev.startup
    if facts.capture_bs:
        return max(facts.capture_bs)
    return facts.cuda_graph_max_bs_decode


def cuda_graph_ceiling(ev: RunEvidence, ctx: Context) -> Cause | None:
    ceiling = graph_ceiling(ev)
    if ceiling is None or ev.startup.decode_graph_disabled:
        return None
    worst: tuple[float, StepEvidence, float] | None = None
    for step in ctx.late:
        above = [p for p in step.decode if p.running > ceiling]
        if not above or len(above) < len(step.decode) / 2:
            continue
        share = _eager_share(step.decode)
        if share >= EAGER_SHARE and (worst is None or share >= worst[0]):
            worst = (share, step, _median([p.running for p in step.decode]))
    if worst is None:
        return None
    share, step, running = worst
    evidence = [EvidenceItem(
        source="Decode lines",
        text=f"{_window(step)}: #running-req median {running:.0f} > cuda-graph-max-bs-decode "
             f"{ceiling}; cuda graph False in {_pct(share)} of {len(step.decode)} lines",
        values={"running_median": running, "ceiling": ceiling, "eager_share": round(share, 3),
                "lines": len(step.decode), "concurrency": step.concurrency})]
    if ev.startup.capture_bs:
        evidence.append(EvidenceItem(
            source="startup log",
            text=f"decode CUDA graphs captured for bs {ev.startup.capture_bs[0]}.."
                 f"{max(ev.startup.capture_bs)} ({len(ev.startup.capture_bs)} sizes)",
            values={"capture_bs_max": max(ev.startup.capture_bs)}))
    zeros, scrapes = _metric_share(step, "sglang:is_cuda_graph", lambda v: v < 0.5)
    if scrapes:
        evidence.append(EvidenceItem(
            source="/metrics", text=f"sglang:is_cuda_graph 0 in {zeros} of {scrapes} scrapes",
            values={"zero": zeros, "scrapes": scrapes}))
    slow = _step_time(step.decode)
    below = [s for s in ctx.all if s.decode and _median([p.running for p in s.decode]) <= ceiling]
    fast = _step_time(below[-1].decode) if below else None
    if slow and fast:
        evidence.append(EvidenceItem(
            source="Decode lines",
            text=f"decode step {slow * 1000:.0f} ms at #running-req {running:.0f} (eager) vs "
                 f"{fast * 1000:.0f} ms at c={below[-1].concurrency} (graph)",
            values={"eager_step_ms": round(slow * 1000, 1),
                    "graph_step_ms": round(fast * 1000, 1)}))
    target = max(int(running), max(s.concurrency for s in ctx.all))
    confidence = min(0.95, 0.55 + 0.4 * share)
    return Cause(
        id="cuda-graph-ceiling", title="decode batch above the CUDA-graph ceiling runs eagerly",
        confidence=round(confidence, 2), evidence=evidence,
        suggest=Suggestion(
            flags={graph_max_bs_flag(ev.startup.sglang_version).lstrip("-"): target},
            expect=f"batches up to {target} decode inside a CUDA graph: the eager penalty goes "
                   "and throughput keeps rising past the knee (sglang#33483, PR #21005)"))


def eager_decode(ev: RunEvidence, ctx: Context) -> Cause | None:
    points = [p for s in ctx.all for p in s.decode]
    ceiling = graph_ceiling(ev)
    inside = [p for p in points if ceiling is None or p.running <= ceiling]
    share = _eager_share(inside)
    if not ev.startup.decode_graph_disabled and (len(inside) < 2 or share < 0.9):
        return None
    evidence = []
    if ev.startup.decode_graph_disabled:
        evidence.append(EvidenceItem(source="profile flags / server_info",
                                     text="decode CUDA graph disabled (--disable-cuda-graph or "
                                          "--cuda-graph-backend-decode disabled)",
                                     values={"disabled": True}))
    if inside:
        evidence.append(EvidenceItem(
            source="Decode lines",
            text=f"cuda graph False in {_pct(share)} of {len(inside)} lines at every batch size",
            values={"eager_share": round(share, 3), "lines": len(inside)}))
    flags: dict[str, object] = {"cuda-graph-backend-decode": "full"}
    if "disable-cuda-graph" in ev.flags:
        flags["disable-cuda-graph"] = None
    return Cause(id="eager-decode", title="decode runs without CUDA graphs",
                 confidence=0.9 if ev.startup.decode_graph_disabled else 0.7, evidence=evidence,
                 suggest=Suggestion(flags=flags,
                                    expect="every decode step replays a graph: lower per-step "
                                           "launch cost at every concurrency"))


# ------------------------------------------------------------------------------ scheduler


def running_cap(ev: RunEvidence, ctx: Context) -> Cause | None:
    cap = ev.startup.max_running_requests
    if not cap:
        return None
    for step in ctx.late:
        if step.concurrency <= cap or not step.decode:
            continue
        running = _median([p.running for p in step.decode])
        queue = _median([p.queue for p in step.decode])
        if running < 0.95 * cap or queue <= 0:
            continue
        evidence = [EvidenceItem(
            source="Decode lines",
            text=f"{_window(step)}: #running-req median {running:.0f} = max_running_requests "
                 f"{cap} while #queue-req median {queue:.0f}",
            values={"running_median": running, "cap": cap, "queue_median": queue,
                    "concurrency": step.concurrency})]
        reduced = ev.startup.running_cap_reduced_from
        flags: dict[str, object]
        if reduced:
            evidence.append(EvidenceItem(
                source="startup log",
                text=f"max_running_requests was reduced from the requested {reduced} to {cap} "
                     "(KV cache capacity)", values={"requested": reduced, "effective": cap}))
            flags = {"max-total-tokens": None} if "max-total-tokens" in ev.flags else {
                "mem-fraction-static": round(min(0.95, (ev.startup.mem_fraction_static or 0.85)
                                                 + 0.05), 3)}
        else:
            flags = {"max-running-requests": max(s.concurrency for s in ctx.all)}
        return Cause(id="running-cap", title="running requests held at the scheduler's cap",
                     confidence=0.9, evidence=evidence,
                     suggest=Suggestion(flags=flags,
                                        expect="#running-req follows the offered concurrency "
                                               f"past {cap}; #queue-req drains"))
    return None


def kv_cache_full(ev: RunEvidence, ctx: Context) -> Cause | None:
    retract_lines = sum(s.retract_lines for s in ctx.late)
    retracted = sum(s.retracted_reqs for s in ctx.late)
    usages = [p.token_usage for s in ctx.late for p in s.decode if p.token_usage is not None]
    peak = max(usages, default=0.0)
    if not retract_lines and peak < FULL_USAGE:
        return None
    evidence = [EvidenceItem(
        source="Decode lines",
        text=f"token usage up to {peak:.2f} in steps c>={ctx.late[0].concurrency}",
        values={"token_usage_max": peak})] if usages else []
    if retract_lines:
        evidence.insert(0, EvidenceItem(
            source="log warnings",
            text=f"{retract_lines} 'KV cache pool is full. Retract requests.' lines, "
                 f"{retracted} requests retracted",
            values={"retract_lines": retract_lines, "retracted_reqs": retracted}))
    if ev.startup.max_total_num_tokens:
        evidence.append(EvidenceItem(source="startup log",
                                     text=f"max_total_num_tokens={ev.startup.max_total_num_tokens}",
                                     values={"max_total_num_tokens":
                                             ev.startup.max_total_num_tokens}))
    if "max-total-tokens" in ev.flags:
        flags: dict[str, object] = {"max-total-tokens": None}
    elif (ev.startup.kv_cache_dtype or "auto") in ("auto", "bf16", "bfloat16"):
        flags = {"kv-cache-dtype": "fp8_e4m3"}
    else:
        flags = {"mem-fraction-static": round(min(0.95, (ev.startup.mem_fraction_static or 0.85)
                                                  + 0.05), 3)}
    confidence = 0.9 if retract_lines else 0.7
    return Cause(id="kv-cache-full", title="KV cache pool full: requests wait or are retracted",
                 confidence=confidence, evidence=evidence,
                 suggest=Suggestion(flags=flags, expect="more KV tokens: no retractions, more "
                                                        "requests decode together"))


def prefill_interference(ev: RunEvidence, ctx: Context) -> Cause | None:
    for step in ctx.late:
        client = step.client
        mixed = [p for p in step.prefill if p.running > 0]
        if not mixed or client is None or not client.itl_p50_ms or not client.itl_p99_ms:
            continue
        ratio = client.itl_p99_ms / client.itl_p50_ms
        tokens = _median([p.new_token for p in mixed])
        if ratio < 3.0 or tokens < 1024:
            continue
        chunk = ev.startup.chunked_prefill_size or 8192
        return Cause(
            id="prefill-interference", title="prefill chunks stall the running decode batch",
            confidence=round(min(0.85, 0.4 + ratio / 20), 2),
            evidence=[
                EvidenceItem(source="Prefill lines",
                             text=f"{_window(step)}: {len(mixed)} prefill batches while "
                                  f"#running-req > 0, #new-token median {tokens:.0f} "
                                  f"(chunked_prefill_size {chunk})",
                             values={"mixed_prefills": len(mixed), "new_token_median": tokens,
                                     "chunk": chunk}),
                EvidenceItem(source="client",
                             text=f"ITL p99 {client.itl_p99_ms:.0f} ms = {ratio:.1f}x p50 "
                                  f"{client.itl_p50_ms:.0f} ms",
                             values={"itl_p99_ms": client.itl_p99_ms,
                                     "itl_p50_ms": client.itl_p50_ms, "ratio": round(ratio, 2)}),
            ],
            suggest=_shorter_stalls(ev, chunk))
    return None


def _shorter_stalls(ev: RunEvidence, chunk: int) -> Suggestion:
    """SGLang runs prefill first and continues a chunked prompt in the next round, so the
    running batch decodes between chunks only with --enable-mixed-chunk (scheduler.py
    `get_next_batch_to_run`, `mix_with_running`); then the chunk size bounds the stall."""
    mixed = bool(ev.startup.enable_mixed_chunk or ev.flags.get("enable-mixed-chunk"))
    flags: dict[str, Any] = {"chunked-prefill-size": max(512, chunk // 4)}
    if not mixed:
        flags = {"enable-mixed-chunk": True, **flags}
    return Suggestion(flags=flags, expect="the running batch decodes inside each smaller "
                                          "prefill chunk: ITL p99 down (TTFT rises a little)")


# ------------------------------------------------------------------------------ hardware


def tp_allreduce_pcie(ev: RunEvidence, ctx: Context) -> Cause | None:
    tp = ev.startup.tp_size or int(ev.flags.get("tp-size", 1) or 1)
    if tp <= 2 or ev.topology.nvlink:
        return None
    p2p_off = ev.env.get("NCCL_P2P_DISABLE", "").strip() in ("1", "true", "yes")
    custom_off = bool(ev.startup.disable_custom_all_reduce or ev.flags.get(
        "disable-custom-all-reduce"))
    where = "no NVLink in the topology" if ev.topology.nvlink is False else "NVLink not seen"
    evidence = [EvidenceItem(source="topology",
                             text=f"TP{tp} over PCIe ({where}): all-reduces go through NCCL",
                             values={"tp": tp, "nvlink": ev.topology.nvlink})]
    confidence = 0.45 if ev.topology.nvlink is False else 0.3
    if p2p_off:
        evidence.append(EvidenceItem(source="profile env",
                                     text="NCCL_P2P_DISABLE=1: all-reduce traffic goes through "
                                          "host memory", values={"NCCL_P2P_DISABLE": "1"}))
        confidence += 0.2
    if custom_off:
        evidence.append(EvidenceItem(source="profile flags", text="--disable-custom-all-reduce",
                                     values={"disable_custom_all_reduce": True}))
        confidence += 0.1
    busy = [g for s in ctx.late for g in s.gpu if g.util is not None and g.util > 0]
    if busy:
        util = _median([g.util or 0.0 for g in busy])
        pcie = _median([g.pcie_bytes_s or 0.0 for g in busy])
        evidence.append(EvidenceItem(source="GPU telemetry",
                                     text=f"GPU utilisation median {util:.0f}% with PCIe "
                                          f"{pcie / 1e6:.0f} MB/s per GPU",
                                     values={"util_median": util, "pcie_bytes_s": pcie}))
        if util < PCIE_SLOW_UTIL:
            confidence += 0.1
    if p2p_off:
        suggest = Suggestion(env={"NCCL_P2P_DISABLE": None},
                             expect="all-reduce over PCIe P2P instead of host memory: a smaller "
                                    "fixed cost per step at every concurrency")
    elif custom_off:
        suggest = Suggestion(flags={"disable-custom-all-reduce": None},
                             expect="the one-shot custom all-reduce where it applies")
    else:
        suggest = Suggestion(flags={"tp-size": tp // 2, "dp-size": 2},
                             expect="half the ranks per all-reduce; two replicas")
    return Cause(id="tp-allreduce-pcie", title="tensor-parallel all-reduce over PCIe",
                 confidence=round(min(0.85, confidence), 2), evidence=evidence, suggest=suggest)


def power_cap(ev: RunEvidence, ctx: Context) -> Cause | None:
    busy = [g for s in ctx.late for g in s.gpu if (g.util or 0) > 5]
    capped = [g for g in busy if any("power" in r for r in g.reasons)]
    if not busy or len(capped) < 0.5 * len(busy):
        return None
    power = _median([g.power_w or 0.0 for g in capped])
    limit = _median([g.power_limit_w or 0.0 for g in capped])
    clock = _median([g.sm_clock_mhz or 0.0 for g in capped])
    top = _median([g.sm_clock_max_mhz or 0.0 for g in capped])
    return Cause(
        id="power-cap", title="GPUs held at their power limit; SM clocks fall",
        confidence=0.8,
        evidence=[EvidenceItem(
            source="GPU telemetry",
            text=f"sw power cap in {_pct(len(capped) / len(busy))} of busy samples; power "
                 f"{power:.0f} W of {limit:.0f} W limit; SM clock {clock:.0f} of {top:.0f} MHz",
            values={"capped_share": round(len(capped) / len(busy), 3), "power_w": power,
                    "power_limit_w": limit, "sm_clock_mhz": clock, "sm_clock_max_mhz": top})],
        suggest=Suggestion(host="raise the board power limit (nvidia-smi -pl) or check cooling",
                           expect="SM clocks back to their maximum: compute terms faster"))


def thermal(ev: RunEvidence, ctx: Context) -> Cause | None:
    busy = [g for s in ctx.late for g in s.gpu if (g.util or 0) > 5]
    hot = [g for g in busy if any("thermal" in r for r in g.reasons)]
    if not busy or len(hot) < 0.3 * len(busy):
        return None
    temp = max(g.temp_c or 0.0 for g in hot)
    return Cause(id="thermal", title="GPUs slow down for temperature", confidence=0.75,
                 evidence=[EvidenceItem(
                     source="GPU telemetry",
                     text=f"thermal slowdown in {_pct(len(hot) / len(busy))} of busy samples; "
                          f"up to {temp:.0f} C",
                     values={"thermal_share": round(len(hot) / len(busy), 3), "temp_max": temp})],
                 suggest=Suggestion(host="check airflow and fan curves; lower the power limit",
                                    expect="clocks stay at their maximum under load"))


def moe_untuned(ev: RunEvidence, ctx: Context) -> Cause | None:
    warning = ev.startup.moe_untuned_warning
    seen = any("moe-default-config" in s.warnings for s in ctx.all)
    if not warning and not seen:
        return None
    backend = ev.startup.moe_runner_backend or str(ev.flags.get("moe-runner-backend", "auto"))
    evidence = [EvidenceItem(source="startup log",
                             text="'Using default MoE kernel config. Performance might be "
                                  f"sub-optimal!' (moe-runner-backend {backend})",
                             values={"moe_runner_backend": backend})]
    return Cause(id="moe-untuned", title="Triton MoE runs its default (untuned) kernel config",
                 confidence=0.6, evidence=evidence,
                 suggest=Suggestion(flags={"moe-runner-backend": "cutlass"},
                                    expect="tuned MoE GEMMs: less time per step at every "
                                           "concurrency (or tune configs with SGLang's "
                                           "benchmark/kernels/fused_moe_triton)"))


# ------------------------------------------------------------------------------ client


def client_bound(ev: RunEvidence, ctx: Context) -> Cause | None:
    for step in ctx.late:
        c = step.client
        if c is None or c.measured_concurrency is None:
            continue
        # The engine's own warning (a worker above 75% CPU or event-loop lag p99 > 20 ms,
        # AIPerf's thresholds) says the client may distort the step; holding fewer streams
        # than asked says it did.
        busy = (c.client_cpu_max or 0.0) >= 0.85 or bool(c.client_warning)
        short = c.measured_concurrency < 0.85 * c.target
        enough = c.num_prompts is None or c.num_prompts >= c.target
        if busy and enough:
            workers = int(ev.flags.get("_workers", 0) or 0)
            return Cause(
                id="client-bound", title="the load generator cannot hold the concurrency",
                confidence=0.85 if short else 0.65,
                evidence=[EvidenceItem(
                    source="client",
                    text=f"{_window(step)}: busiest worker CPU "
                         f"{(c.client_cpu_max or 0) * 100:.0f}%, achieved concurrency "
                         f"{c.measured_concurrency:.1f} of {c.target}"
                         + (f" ({c.client_warning})" if c.client_warning else ""),
                    values={"client_cpu_max": c.client_cpu_max, "target": c.target,
                            "measured_concurrency": round(c.measured_concurrency, 2)})],
                suggest=Suggestion(sweep={"workers": max(2, workers * 2) if workers else 4},
                                   expect="achieved concurrency reaches the target"))
    return None


def too_few_prompts(ev: RunEvidence, ctx: Context) -> Cause | None:
    worst: tuple[float, StepEvidence] | None = None
    for step in ctx.all:
        c = step.client
        if c is None or not c.num_prompts:
            continue
        waves = c.num_prompts / c.target
        if waves < 2 and (worst is None or waves < worst[0]):
            worst = (waves, step)
    if worst is None:
        return None
    waves, step = worst
    c = step.client
    assert c is not None
    achieved = c.measured_concurrency or 0.0
    strong = waves < 1 or achieved < 0.8 * c.target
    return Cause(
        id="too-few-prompts", title="too few prompts per concurrency: no steady state",
        confidence=0.85 if strong else 0.25,
        evidence=[EvidenceItem(
            source="client",
            text=f"{_window(step)}: {c.num_prompts} prompts at concurrency {c.target} "
                 f"({waves:.2f} waves); achieved concurrency {achieved:.1f}",
            values={"num_prompts": c.num_prompts, "target": c.target, "waves": round(waves, 3),
                    "measured_concurrency": round(achieved, 2)})],
        suggest=Suggestion(sweep={"prompts_per_concurrency": 5},
                           expect="five waves per step: ramp-up and drain stop dominating "
                                  "(SGLang's docs advise >= 5x the concurrency)"))


RULES: dict[str, Callable[[RunEvidence, Context], Cause | None]] = {
    "cuda-graph-ceiling": cuda_graph_ceiling,
    "eager-decode": eager_decode,
    "running-cap": running_cap,
    "kv-cache-full": kv_cache_full,
    "prefill-interference": prefill_interference,
    "tp-allreduce-pcie": tp_allreduce_pcie,
    "power-cap": power_cap,
    "thermal": thermal,
    "moe-untuned": moe_untuned,
    "client-bound": client_bound,
    "too-few-prompts": too_few_prompts,
}
