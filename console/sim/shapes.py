"""The text of the simulator's SGLang log lines, per SGLang version.

Every shape below was read from that release's wheel (sglang==0.4.10 / 0.5.18 / 0.5.23 on PyPI;
file names relative to `sglang/srt/`). The values are the simulator's; only the shapes must
match. `console.sglang.versions.Traits` says which shape a version writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.sglang.versions import Traits


def server_args_line(traits: Traits, sa: Mapping[str, Any]) -> str:
    """`server_args=ServerArgs(...)` (0.4.10 / 0.5.18 entrypoints/engine.py
    `logger.info(f"{server_args=}")`, a dataclass repr) or `server_args={...}` (0.5.23
    entrypoints/engine.py `_server_args_for_logging`, `resolved_dict()`)."""
    if not traits.server_args_dataclass:
        return f"server_args={dict(sa)!r}"
    body = ", ".join(f"{key}={_field_repr(key, value)}" for key, value in sa.items())
    return f"server_args=ServerArgs({body})"


def _field_repr(key: str, value: Any) -> str:
    if key == "cuda_graph_config" and isinstance(value, Mapping):
        # model_executor/cuda_graph_config.py (0.5.18): CudaGraphConfig(decode=PhaseConfig(...))
        phases = ", ".join(f"{phase}=PhaseConfig(backend={cfg.get('backend')!r}, "
                           f"max_bs={cfg.get('max_bs')!r}, bs={cfg.get('bs')!r}, "
                           "tc_compiler='eager', full_prefill_max_req=None, "
                           "full_prefill_prefix_chunk_tokens=None)"
                           for phase, cfg in value.items())
        return f"CudaGraphConfig({phases})"
    return repr(value)


def init_begin(traits: Traits) -> str:
    # 0.5.23 distributed/bootstrap.py; 0.5.18 distributed/bootstrap.py; 0.4.10 model_runner.py
    return "Init parallel begin." if traits.init_parallel_wording else \
        "Init torch distributed begin."


def init_end(traits: Traits, elapsed: float, mem_usage: float) -> list[str]:
    if traits.init_parallel_wording:  # 0.5.23: two lines
        return [f"Init parallel ends. elapsed={elapsed:.2f} s",
                f"Memory baseline taken. mem usage={mem_usage:.2f} GB"]
    if traits.load_weight_elapsed:  # 0.5.18 bootstrap.py:151
        return [f"Init torch distributed ends. elapsed={elapsed:.2f} s, "
                f"mem usage={mem_usage:.2f} GB"]
    return [f"Init torch distributed ends. mem usage={mem_usage:.2f} GB"]  # 0.4.10 :593


def load_weight_end(traits: Traits, *, elapsed: float, arch: str, quant: str | None,
                    avail: float, usage: float) -> str:
    if traits.load_weight_elapsed:  # 0.5.x model_runner.py load_model
        quant_text = f"quant={quant}, fmt=e4m3, " if quant else ""
        return (f"Load weight end. elapsed={elapsed:.2f} s, type={arch}, {quant_text}"
                f"avail mem={avail:.2f} GB, mem usage={usage:.2f} GB.")
    return (f"Load weight end. type={arch}, dtype=torch.bfloat16, avail mem={avail:.2f} GB, "
            f"mem usage={usage:.2f} GB.")  # 0.4.10 model_runner.py:683


def kv_allocated(traits: Traits, dtype: str, tokens: int, half_gb: float) -> str:
    if traits.kv_alloc_dtype:  # 0.5.x mem_cache/memory_pool.py _finalize_allocation_log
        return (f"KV Cache is allocated. dtype: {dtype}, #tokens: {tokens}, "
                f"K size: {half_gb:.2f} GB, V size: {half_gb:.2f} GB")
    return (f"KV Cache is allocated. #tokens: {tokens}, K size: {half_gb:.2f} GB, "
            f"V size: {half_gb:.2f} GB")  # 0.4.10 mem_cache/memory_pool.py:227


def prefill_capture_begin(backend: str, sizes: Sequence[int], avail: float) -> str:
    # 0.5.x model_executor/model_runner_components/cuda_graph_setup.py capture_prefill_graph
    return (f"Capture target prefill CUDA graph begin. backend={backend}, "
            f"num_tokens={list(sizes)}, avail mem={avail:.2f} GB")


def prefill_capture_end(elapsed: float, usage: float, avail: float) -> str:
    return (f"Capture target prefill CUDA graph end. elapsed={elapsed:.2f} s, "
            f"mem usage={usage:.2f} GB, avail mem={avail:.2f} GB.")


def _capture_name(width: int | None) -> str:
    """cuda_graph_setup.py:746-752: a speculative target captures `target verify` graphs of
    `decode_num_tokens_per_req()` tokens per request, else `target decode` of 1."""
    return "target decode" if width is None else "target verify"


def decode_capture_begin(traits: Traits, backend: str, bs: Sequence[int], avail: float,
                         width: int | None = None) -> str:
    """`width`: the verify tokens per request under speculative decoding (None: decode)."""
    if traits.capture == "single":  # 0.4.10 model_runner.py init_cuda_graphs
        return ("Capture cuda graph begin. This can take up to several minutes. "
                f"avail mem={avail:.2f} GB")
    sizes = f"bs={list(bs)}, " if traits.capture == "bs_on_begin" else ""  # 0.5.18
    return (f"Capture {_capture_name(width)} CUDA graph begin. backend={backend}, "
            f"num_tokens_per_req={width or 1}, "
            f"{sizes}avail mem={avail:.2f} GB")  # cuda_graph_setup.py capture_decode_graph


def decode_capture_end(traits: Traits, bs: Sequence[int], elapsed: float, usage: float,
                       avail: float, width: int | None = None) -> str:
    if traits.capture == "single":
        return (f"Capture cuda graph end. Time elapsed: {elapsed:.2f} s. "
                f"mem usage={usage:.2f} GB. avail mem={avail:.2f} GB.")
    sizes = f"bs={list(bs)}, " if traits.capture == "bs_on_end" else ""  # 0.5.23 only
    return (f"Capture {_capture_name(width)} CUDA graph end. {sizes}elapsed={elapsed:.2f} s, "
            f"mem usage={usage:.2f} GB, avail mem={avail:.2f} GB.")


def capture_progress(bs: Sequence[int], avail: float, seconds: float) -> str:
    """tqdm's bar over the captured sizes, largest first (0.4.10 cuda_graph_runner.py,
    0.5.x model_executor/runner/decode_cuda_graph_runner.py: `Capturing batches ({bs=}
    {avail_mem=:.2f} GB)`), on TP rank 0's stderr: frames joined by carriage returns, a
    newline when the bar closes. No log prefix: tqdm writes the stream itself."""
    total = len(bs)
    order = list(reversed(bs))
    frames = []
    for done in (0, total):
        shown = order[min(done, total - 1)] if order else 0
        pct = 100 * done // max(1, total)
        bar = "\u2588" * (10 * done // max(1, total))
        rate = f"{total / seconds:.2f}it/s" if done and seconds > 0 else "?it/s"
        elapsed = f"00:{int(seconds):02d}" if done else "00:00"
        eta = "00:00" if done else "?"
        frames.append(f"Capturing batches (bs={shown} avail_mem={avail:.2f} GB): {pct:3d}%|"
                      f"{bar:<10}| {done}/{total} [{elapsed}<{eta}, {rate:>10}]")
    return "\r" + "\r".join(frames)


def capture_bs_line(bs: Sequence[int]) -> str:
    """0.4.10 cuda_graph_runner.py:238 `rank0_log(f"Capture cuda graph bs {self.capture_bs}")`."""
    return f"Capture cuda graph bs {list(bs)}"


def prefill_batch(traits: Traits, *, seqs: int, new: int, cached: int, usage: float,
                  running: int, queued: int, pending: int, graph: bool,
                  throughput: float) -> str:
    if traits.batch_dot:  # 0.4.10 managers/scheduler_metrics_mixin.py log_prefill_stats
        return (f"Prefill batch. #new-seq: {seqs}, #new-token: {new}, #cached-token: {cached}, "
                f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queued}, ")
    # 0.5.x managers/scheduler_components/metrics_reporter.py log_prefill_stats
    return (f"Prefill batch, #new-seq: {seqs}, #new-token: {new}, #cached-token: {cached}, "
            f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queued}, "
            f"#pending-token: {pending}, cuda graph: {graph}, "
            f"input throughput (token/s): {throughput:.2f}")


def decode_batch(traits: Traits, *, running: int, tokens: int, usage: float, graph: bool,
                 throughput: float, queued: int,
                 accept: tuple[float, float] | None = None) -> str:
    """`accept`: (accept len, accept rate) of the interval under speculative decoding."""
    if traits.batch_dot:  # 0.4.10 scheduler_metrics_mixin.py log_decode_stats (trailing ", ")
        # 0.4.x wrote `accept len` alone (tests/data/logs/real/pr6081-mtp-dp-attention-*.log)
        spec = f"accept len: {accept[0]:.2f}, " if accept else ""
        return (f"Decode batch. #running-req: {running}, #token: {tokens}, "
                f"token usage: {usage:.2f}, {spec}cuda graph: {graph}, "
                f"gen throughput (token/s): {throughput:.2f}, #queue-req: {queued}, ")
    # 0.5.x metrics_reporter.py log_decode_stats with pool_stats_observer.py's "#token: N,
    # token usage: U" (no hybrid pools, no PD); speculative decoding adds "accept len: L,
    # accept rate: R, " after the pool's part (metrics_reporter.py:1005 in 0.5.23)
    spec = f"accept len: {accept[0]:.2f}, accept rate: {accept[1]:.2f}, " if accept else ""
    return (f"Decode batch, #running-req: {running}, #token: {tokens}, "
            f"token usage: {usage:.2f}, {spec}cuda graph: {graph}, "
            f"gen throughput (token/s): {throughput:.2f}, #queue-req: {queued}")


def freeze_gc(context: str, gen: tuple[int, int, int]) -> str:
    """utils/common.py freeze_gc (0.5.18 at info, 0.5.23 at debug)."""
    g0, g1, g2 = gen
    return (f"Freezing GC in {context} process. gen0: {g0}->0, gen1: {g1}->0, "
            f"gen2: {g2}->0")


def draining(traits: Traits, rids: Sequence[str]) -> str:
    """managers/tokenizer_manager.py sigterm_watchdog."""
    if traits.drain_rids:
        return (f"Gracefully exiting... Remaining number of requests {len(rids)}. "
                f"Remaining requests remaining_rids={list(rids)}.")
    return f"Gracefully exiting... remaining number of requests {len(rids)}"
