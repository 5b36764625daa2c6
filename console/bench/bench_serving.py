"""Driving SGLang's own client (`python -m sglang.benchmark.serving`) on the host, and parsing
what it prints and writes.

Per step: `--max-concurrency C --request-rate inf --random-range-ratio 1` on an offline-safe
dataset (`random-ids` with a tokenizer path; `--tokenize-prompt` on /generate for exact
lengths), `--output-file` per step. Its JSONL line holds a bare `Infinity` (Python's
json.dumps of float('inf')), which `json.loads` accepts and strict parsers do not.
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from console.bench.engines import Emit, StepError, StepOutcome, prompts_for, prompts_for_rate
from console.bench.models import Distribution, StepMetrics, StepPhase
from console.bench.slo import from_bench_serving, goodput_argv
from console.config_models import SweepPreset
from console.host.transport import Transport
from console.text import sanitize

MODULE = "sglang.benchmark.serving"
OLD_MODULE = "sglang.bench_serving"
BACKENDS = {"generate": "sglang", "completions": "sglang-oai", "chat": "sglang-oai-chat"}

# Result-block label -> JSONL key (the block prints the same numbers, rounded to 2 places).
BLOCK_LABELS: dict[str, str] = {
    "Backend": "backend",
    "Traffic request rate": "request_rate",
    "Max request concurrency": "max_concurrency",
    "Successful requests": "completed",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "total_input_tokens",
    "Total input text tokens": "total_input_text_tokens",
    "Total input vision tokens": "total_input_vision_tokens",
    "Total generated tokens": "total_output_tokens",
    "Total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "Request throughput (req/s)": "request_throughput",
    "Input token throughput (tok/s)": "input_throughput",
    "Output token throughput (tok/s)": "output_throughput",
    "Peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "Peak concurrent requests": "max_concurrent_requests",
    "Total token throughput (tok/s)": "total_throughput",
    "Concurrency": "concurrency",
    "Accept length": "accept_length",
}
for _metric, _label in (("e2e_latency", "E2E Latency"), ("ttft", "TTFT"), ("tpot", "TPOT"),
                        ("itl", "ITL")):
    for _stat, _prefix in (("mean", "Mean"), ("median", "Median"), ("p90", "P90"),
                           ("p95", "P95"), ("p99", "P99"), ("max", "Max")):
        BLOCK_LABELS[f"{_prefix} {_label} (ms)"] = f"{_stat}_{_metric}_ms"

_BLOCK_START = re.compile(r"^=+ Serving Benchmark Result =+\s*$")
_LINE = re.compile(r"^(?P<label>[A-Za-z][^:]*?):\s+(?P<value>\S.*?)\s*$")


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


def parse_result_block(lines: Sequence[str]) -> dict[str, Any] | None:
    """The last `Serving Benchmark Result` block in `lines`, keyed like the JSONL record.
    None if there is no complete block (e.g. the run crashed)."""
    start = None
    for index, line in enumerate(lines):
        if _BLOCK_START.match(line.strip()):
            start = index
    if start is None:
        return None
    result: dict[str, Any] = {}
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if stripped.startswith("=" * 10):
            return result
        match = _LINE.match(stripped)
        if match and match.group("label") in BLOCK_LABELS:
            result[BLOCK_LABELS[match.group("label")]] = _number(match.group("value"))
    return None  # no closing line: the block was cut off


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    """Every record of a bench_serving JSONL file (bare `Infinity`/`NaN` accepted)."""
    records = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        data = json.loads(line)  # Python's json accepts Infinity, as bench_serving writes it
        if isinstance(data, dict):
            records.append(data)
    return records


def _dist(record: Mapping[str, Any], name: str) -> Distribution:
    def get(stat: str) -> float | None:
        value = record.get(f"{stat}_{name}_ms")
        return float(value) if isinstance(value, int | float) else None

    return Distribution(
        mean=get("mean"), p50=get("median"), p90=get("p90"), p99=get("p99"), count=0
    )


def record_to_metrics(
    record: Mapping[str, Any], concurrency: int, num_prompts: int | None = None
) -> StepMetrics:
    completed = int(record.get("completed") or 0)
    sent = num_prompts if num_prompts is not None else completed
    return StepMetrics(
        concurrency=concurrency,
        completed=completed,
        errors=max(0, sent - completed),
        duration_s=float(record.get("duration") or 0.0),
        request_per_s=float(record.get("request_throughput") or 0.0),
        input_tok_s=float(record.get("input_throughput") or 0.0),
        output_tok_s=float(record.get("output_throughput") or 0.0),
        total_tok_s=float(record.get("total_throughput") or 0.0),
        input_tokens=int(record.get("total_input_tokens") or 0),
        output_tokens=int(record.get("total_output_tokens") or 0),
        measured_concurrency=float(record.get("concurrency") or 0.0),
        ttft_ms=_dist(record, "ttft"),
        itl_ms=_dist(record, "itl"),
        tpot_ms=_dist(record, "tpot"),
        e2e_ms=_dist(record, "e2e_latency"),
        engine="bench-serving",
    )


def _arrival_args(spec: SweepPreset, concurrency: int) -> list[str]:
    """Closed loop: --max-concurrency C at rate inf. A rate step (open loop): its rate,
    Poisson (0.5.23's get_request has no burstiness), and the cap if there is one."""
    rate = spec.request_rate[0] if spec.request_rate else None
    if rate is None:
        return ["--max-concurrency", str(concurrency), "--request-rate", "inf"]
    cap = ["--max-concurrency", str(spec.max_concurrency)] if spec.max_concurrency else []
    return [*cap, "--request-rate", "inf" if rate == float("inf") else f"{rate:g}"]


def bench_argv(
    prefix: Sequence[str],
    spec: SweepPreset,
    concurrency: int,
    *,
    base_url: str,
    tokenizer: str | None,
    output_file: str,
    num_prompts: int,
    seed: int = 1,
) -> list[str]:
    backend = BACKENDS[spec.endpoint]
    argv = [
        *prefix,
        "--backend", backend,
        "--base-url", base_url,
        "--dataset-name", "random-ids",
        "--random-input-len", str(spec.input_len),
        "--random-output-len", str(spec.output_len),
        "--random-range-ratio", f"{spec.range_ratio:g}",
        "--num-prompts", str(num_prompts),
        *_arrival_args(spec, concurrency),
        "--warmup-requests", str(spec.warmup_prompts),
        "--output-file", output_file,
        "--seed", str(seed),
        "--disable-tqdm",
    ]  # fmt: skip
    if spec.workload == "shared-prefix":
        # benchmark/datasets/generated_shared_prefix.py, instead of random-ids
        at = argv.index("--dataset-name")
        argv[at + 1:at + 8] = [
            "generated-shared-prefix", "--gsp-num-groups", str(spec.prefix_groups),
            "--gsp-prompts-per-group", str(spec.prompts_per_group),
            "--gsp-system-prompt-len", str(spec.prefix_len),
            "--gsp-question-len", str(spec.input_len),
            "--gsp-output-len", str(spec.output_len)]
    if tokenizer:
        argv += ["--tokenizer", tokenizer]
    if spec.endpoint == "generate":
        argv.append("--tokenize-prompt")  # token ids on the wire: exact input lengths
    if spec.flush_cache:
        argv.append("--flush-cache")
    if not spec.ignore_eos:
        argv.append("--disable-ignore-eos")
    argv += goodput_argv(spec.slo)
    return argv


class BenchServingEngine:
    """Runs SGLang's bench client on the host through a Transport, one process per step."""

    name = "bench-serving"

    def __init__(
        self,
        transport: Transport,
        *,
        host_base_url: str,
        python: str = "python3",
        command: Sequence[str] | None = None,
        tokenizer: str | None = None,
        workdir: str = "/tmp",
        env: Mapping[str, str] | None = None,
        seed: int = 1,
    ) -> None:
        self.transport = transport
        self.host_base_url = host_base_url
        self.python = python
        self.prefix: list[str] | None = list(command) if command else None
        self.tokenizer = tokenizer
        self.workdir = workdir.rstrip("/") or "/"
        self.env = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
        self.seed = seed
        self.token = uuid.uuid4().hex[:8]
        self._stream: Any = None
        self.last_lines: list[str] = []

    async def prepare(self, base_url: str, spec: SweepPreset) -> None:
        if self.prefix is not None:
            return
        probe = (
            "import importlib.util as u, sys; "
            f"sys.exit(0 if u.find_spec({MODULE!r}) else 3)"
        )
        result = await self.transport.run([self.python, "-c", probe], timeout=120)
        module = MODULE if result.ok else OLD_MODULE  # older SGLang only has the old name
        self.prefix = [self.python, "-m", module]

    async def run_step(
        self, base_url: str, spec: SweepPreset, index: int, concurrency: int, emit: Emit
    ) -> StepOutcome:
        if spec.step_seconds is not None and spec.num_prompts is None:
            num_prompts = max(concurrency * 4, int(spec.step_seconds * concurrency))
        else:
            num_prompts = prompts_for(spec, concurrency) or concurrency
        if spec.request_rate:  # open loop: the rate step's own count
            num_prompts = prompts_for_rate(spec) or max(1, int(
                min(spec.request_rate[0], 1e5) * (spec.step_seconds or 60)))
        workdir = await self.transport.resolve_path(self.workdir)  # `~`: the host's home
        output_file = f"{workdir}/plateau-bench-{self.token}-{index}.jsonl"
        argv = bench_argv(
            self.prefix or [self.python, "-m", MODULE],
            spec,
            concurrency,
            base_url=self.host_base_url,
            tokenizer=self.tokenizer,
            output_file=output_file,
            num_prompts=num_prompts,
            seed=self.seed + index,
        )
        emit(StepPhase(index, "measure", shlex.join(argv)))
        lines: list[str] = []
        # stderr carries warnings and tracebacks; merge it so a crash is visible.
        shell = ["sh", "-c", 'exec "$@" 2>&1', "sh", *argv]  # argv stays data, never parsed
        stream = await self.transport.stream_lines(shell, env=self.env)
        self._stream = stream
        try:
            async with stream:
                async for line in stream:
                    clean = sanitize(line)
                    lines.append(clean)
                    if len(lines) > 400:
                        del lines[:100]
                    emit(StepPhase(index, "output", clean))
        finally:
            self._stream = None
        self.last_lines = lines[-20:]
        block = parse_result_block(lines)
        record: dict[str, Any] | None = None
        try:
            text = (await self.transport.read_file(output_file)).decode("utf-8", "replace")
            records = parse_jsonl(text)
            record = records[-1] if records else None
        except (OSError, ValueError, Exception):
            record = None
        finally:
            # The record embeds the server's full /server_info (its API key included): never
            # leave it behind in the host's /tmp.
            with contextlib.suppress(Exception):  # the step's result matters more
                await self.transport.run(["rm", "-f", "--", output_file], timeout=30)
        if record is None and block is None:
            tail = " | ".join(lines[-3:]) if lines else "no output"
            raise StepError(
                f"bench_serving exited ({stream.exit_status}) without a result: {tail}"
            )
        data = record if record is not None else block
        assert data is not None
        metrics = record_to_metrics(data, concurrency, num_prompts)
        slo = from_bench_serving(data, spec.slo, num_prompts, metrics.duration_s)
        metrics = metrics.model_copy(update={"slo": slo})
        if spec.request_rate:  # an open-loop step: its rate is its place on the x axis
            metrics = metrics.model_copy(update={"request_rate": spec.request_rate[0],
                                                 "max_concurrency": spec.max_concurrency})
        raw = dict(record) if record is not None else {"result_block": block}
        raw.pop("server_info", None)  # large, and stored once per run already
        return StepOutcome(metrics, raw)

    def cancel(self) -> None:
        # Closing the stream kills the bench process group on the host.
        pass

    async def close(self) -> None:
        if self._stream is not None:
            await self._stream.close()
