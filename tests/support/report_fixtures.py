"""Stored runs for the report and export tests, written straight into SQLite: the demo's
reference story (eager decode above a CUDA-graph ceiling of 64, on 8 GPUs with NVLink) with its
evidence, and an A/B pair of it with repeats. `hostile` puts host-written markup where a host
writes: the server version, the profile, a flag value, an env value, a failed step's log."""

from __future__ import annotations

from pathlib import Path

from console.bench.models import Distribution, StepMetrics, StepResult
from console.diagnose.models import GpuFacts, GpuPoint, RunEvidence, StartupFacts, StepEvidence
from console.store.db import RunStore
from console.store.models import RunMeta

HOSTILE_VERSION = "<img src=x onerror=alert(1)>"
HOSTILE_PROFILE = "</script><script>alert(2)</script>"
HOSTILE_LOG = "[2026] ERROR <script>alert(3)</script> & \x1b]0;pwned\x07 boom"
# (concurrency, total tok/s) of the reference sweep: it saturates at 64.
REFERENCE = ((8, 130.0), (16, 240.0), (32, 438.0), (64, 757.0), (128, 806.0))
MOE_LINE = ("[2026-01-05 10:00:01 TP0] Using default MoE kernel config. Performance might be "
            "sub-optimal! Config file not found at /x/E=64,N=1408,device_name=NVIDIA_H200.json")


def _metrics(c: int, total: float) -> StepMetrics:
    ttft = 20.0 + c * 0.8
    itl = 5.0 + max(0, c - 64) * 0.05
    return StepMetrics(
        concurrency=c, completed=c * 4, duration_s=60.0, request_per_s=c * 0.05,
        input_tok_s=total * 0.75, output_tok_s=total * 0.25, total_tok_s=total,
        measured_concurrency=c * 0.98,
        ttft_ms=Distribution(mean=ttft, p50=ttft, p90=ttft * 1.5, p99=ttft * 2, count=c * 4),
        itl_ms=Distribution(mean=itl, p50=itl, p90=itl * 1.2, p99=itl * 2, count=c * 400),
        tpot_ms=Distribution(mean=itl, p50=itl, p90=itl * 1.1, p99=itl * 1.3, count=c * 4),
        e2e_ms=Distribution(mean=1000.0, p50=1000.0, p90=1100.0, p99=1200.0, count=c * 4))


def _gpu(t0: float, c: int) -> list[GpuPoint]:
    """8 GPUs, 3 samples each: power and utilisation rise with the load."""
    return [GpuPoint(t=t0 + s, index=g, util=min(99.0, 20.0 + c * 0.6), power_w=200.0 + c * 3,
                     power_limit_w=700.0, sm_clock_mhz=1980.0, temp_c=60.0)
            for s in range(3) for g in range(8)]


def store_run(store: RunStore, *, profile: str = "cutlass-moe", version: str = "0.5.23",
              scale: float = 1.0, repeats: int = 1, started: float = 1_767_600_000.0,
              flags: dict[str, object] | None = None, failed_log: list[str] | None = None,
              env: dict[str, str] | None = None) -> int:
    flags = flags if flags is not None else {"tp": 8, "cuda-graph-max-bs-decode": 64,
                                             "moe-runner-backend": "cutlass"}
    run_id = store.create_run(RunMeta(
        host="demo", profile=profile, server_version=version, flags=flags,
        server_info={"version": version, "model_path": "Qwen/Qwen3-30B-A3B", "tp_size": 8},
        spec={"endpoint": "generate", "input_len": 1024, "output_len": 256},
        label=profile), started_at=started)
    index = 0
    for repeat in range(repeats):
        for c, total in REFERENCE:
            # Repeats differ a little (deterministic), so an A/B has a noise estimate.
            value = total * scale * (1.0 + 0.004 * (repeat - (repeats - 1) / 2))
            t0 = started + 100.0 * index
            step = StepResult(index=index, concurrency=c, repeat=repeat, status="ok",
                              started_at=t0, finished_at=t0 + 60, metrics=_metrics(c, value))
            store.add_step(run_id, step)
            graph = c <= 64
            store.save_step_evidence(run_id, StepEvidence(
                index=index, concurrency=c, started_at=t0, finished_at=t0 + 60,
                decode_rows=[(c, 0, 0.02, graph, c / (0.2 if graph else 0.45))] * 12,
                gpu=_gpu(t0, c)))
            index += 1
    if failed_log is not None:
        store.add_step(run_id, StepResult(index=index, concurrency=256, status="failed",
                                          error="server died", log_tail=failed_log,
                                          started_at=started + 100.0 * index))
    store.save_run_evidence(run_id, RunEvidence(
        startup=StartupFacts(tp_size=8, capture_bs=[1, 2, 4, 8, 16, 32, 48, 64],
                             sglang_version=version, moe_untuned_warning=MOE_LINE),
        flags=dict(flags), env=env or {"NCCL_DEBUG": "WARN"}, sources=["client", "gpu", "log"],
        topology=GpuFacts(gpu_name="NVIDIA H200", num_gpus=8, nvlink=True, source="nvml",
                          driver_version="570.124.06", cuda_version="12.8")))
    store.finish_run(run_id, "finished")
    return run_id


def reference_run(db: Path, *, hostile: bool = False) -> int:
    with RunStore(db) as store:
        if not hostile:
            return store_run(store)
        return store_run(store, profile=HOSTILE_PROFILE, version=HOSTILE_VERSION,
                         flags={"tp": 8, "chat-template": HOSTILE_VERSION},
                         failed_log=[HOSTILE_LOG], env={"X": HOSTILE_PROFILE})


def ab_pair(db: Path) -> tuple[int, int]:
    """A = the reference profile, B = the graph ceiling raised to 128 (6% faster), each with 3
    repeats, stored as an interleaved A/B pair."""
    with RunStore(db) as store:
        a = store_run(store, repeats=3)
        b = store_run(store, profile="cutlass-moe+cuda-graph-ceiling", scale=1.06, repeats=3,
                      started=1_767_700_000.0,
                      flags={"tp": 8, "cuda-graph-max-bs-decode": 128,
                             "moe-runner-backend": "cutlass"})
        store.save_pair(a, b, {"interleaved": True})
    return a, b
