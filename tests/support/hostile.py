"""Hostile numbers from a host: every numeric field SGLang, /metrics, the GPU agent or a
bench result can carry, spelled as a broken or malicious host could spell it.

Built through the real parsers (log assembler, batch-line reader, /metrics parser, GPU
sample validation), so a test feeds the app exactly what a session would publish.
"""

from __future__ import annotations

from typing import Any

from console.logs.assembler import parse_lines
from console.logs.metrics import parse_metrics
from console.logs.server_stats import StatsAggregator
from console.session.events import (
    ConnectionChanged,
    GpuUpdate,
    LogBatch,
    ServerStats,
    ServerStatus,
    SessionEvent,
    TopologyUpdate,
)

# What a float field of a log line may hold: non-finite, overflowing, negative, absurd.
HOSTILE_FLOATS = ("nan", "NaN", "inf", "-inf", "1e400", "-1e400", "-0.5", "1e308", "3e38",
                  "99999999999999999999")
# What an int field may hold: negative, and an int too large for a float (OverflowError).
HOSTILE_INTS = ("-7", "9" * 25, "9" * 400)


def decode_line(ts: str, running: str, usage: str, gen: str, queue: str = "0") -> str:
    return (f"[{ts} TP0] Decode batch, #running-req: {running}, #token: 81234, "
            f"token usage: {usage}, cuda graph: True, gen throughput (token/s): {gen}, "
            f"#queue-req: {queue}")


def prefill_line(ts: str, running: str, usage: str, rate: str) -> str:
    return (f"[{ts} TP0] Prefill batch, #new-seq: 3, #new-token: 4096, #cached-token: 0, "
            f"token usage: {usage}, #running-req: {running}, #queue-req: 0, "
            f"#pending-token: 0, cuda graph: False, input throughput (token/s): {rate}")


def hostile_log_lines(floats: tuple[str, ...] = HOSTILE_FLOATS,
                      ints: tuple[str, ...] = HOSTILE_INTS) -> list[str]:
    """Decode and prefill lines with each hostile value in each numeric field, between
    ordinary lines (so histories mix good and bad points)."""
    lines: list[str] = []
    second = 0

    def ts() -> str:
        nonlocal second
        second += 1
        return f"2026-03-14 12:{second // 60:02d}:{second % 60:02d}"

    for value in floats:
        lines.append(decode_line(ts(), "64", "0.50", "5000.0"))
        lines.append(decode_line(ts(), "64", value, "5000.0"))
        lines.append(decode_line(ts(), "64", "0.50", value))
        lines.append(prefill_line(ts(), "8", value, value))
        lines.append(f"[{ts()} TP0] Decode batch. #running-req: 3, #token: 9, "
                     f"token usage: {value}, gen throughput (token/s): {value}, #queue-req: 0, ")
    for value in ints:
        lines.append(decode_line(ts(), value, "0.5", "100.0", queue=value))
        lines.append(prefill_line(ts(), value, "0.5", "10.0"))
    return lines


def hostile_metrics(value: str) -> str:
    """A /metrics page whose gauges all hold `value` (Prometheus spells NaN, +Inf, -Inf)."""
    names = ("num_running_reqs", "num_queue_reqs", "gen_throughput", "token_usage",
             "is_cuda_graph", "spec_accept_length", "cache_hit_rate")
    labels = '{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0"}'
    return "".join(f"# TYPE sglang:{n} gauge\nsglang:{n}{labels} {value}\n" for n in names)


def hostile_gpu_fields(value: Any) -> dict[str, Any]:
    numeric = ("util_gpu", "util_mem", "mem_used_mib", "mem_total_mib", "power_w",
               "power_limit_w", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz",
               "mem_clock_max_mhz", "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max",
               "pcie_tx_bytes_s", "pcie_rx_bytes_s", "fan_pct", "enc_util", "dec_util")
    return {name: value for name in numeric}


def hostile_events(host: str, header: Any) -> list[SessionEvent]:
    """Everything a session could publish carrying hostile numbers."""
    from console.gpu.models import GpuSample

    events: list[SessionEvent] = [
        ConnectionChanged(host, "connected"),
        ServerStatus(host, "ready", version="0.5.23\x1b]0;pwned\x07\x9b2J", profile="p"),
        TopologyUpdate(host, header),
    ]
    log = parse_lines(hostile_log_lines())
    events.append(LogBatch(host, tuple(log)))
    aggregator = StatsAggregator()
    aggregator.add_events(log)
    events.append(ServerStats(host, aggregator.snapshot()))
    for value in ("NaN", "+Inf", "-Inf", "1e400", "-3"):
        aggregator.add_metrics(parse_metrics(hostile_metrics(value)))
        events.append(ServerStats(host, aggregator.snapshot()))
    for seq, reading in enumerate(
            (float("nan"), float("inf"), -1.0, 1e300, "nan", "1e400", 10**400), start=1):
        gpus = [{"index": i, "name": "GPU", **hostile_gpu_fields(reading)} for i in range(8)]
        sample = GpuSample.model_validate({"seq": seq, "t": 1.0, "cost_ms": reading,
                                           "gpus": gpus})
        events.append(GpuUpdate(host, sample))
    return events


def hostile_step(index: int, concurrency: int, value: float) -> Any:
    """A sweep step whose numbers came from a host's bench_serving result file."""
    from console.bench.models import Distribution, StepMetrics, StepResult

    dist = Distribution(mean=value, p50=value, p90=value, p99=value, count=3)
    metrics = StepMetrics(
        concurrency=concurrency, completed=3, duration_s=value, request_per_s=value,
        input_tok_s=value, output_tok_s=value, total_tok_s=value, measured_concurrency=value,
        ttft_ms=dist, itl_ms=dist, tpot_ms=dist, e2e_ms=dist, engine="bench-serving")
    return StepResult(index=index, concurrency=concurrency, status="ok", metrics=metrics)
