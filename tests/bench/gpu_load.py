"""A GPU load for the device machine's captures: every GPU busy at once, with traffic on each
link the console watches, and the workload's own counts to compare the console's rates with.

One process per GPU (torch.multiprocessing, NCCL): bf16 8192^3 matmuls (utilisation, power,
the SW power cap), an NCCL all-reduce of 64 MiB between all GPUs (NVLink where there is
NVLink), and pinned host-to-GPU copies (PCIe rx). With --ready FILE, the file is written once
every rank has finished its warm-up and is in its loop, so a capture waits on the file, not on
a guessed sleep; the load then runs --seconds more. Counts go to stdout as one JSON line per
rank at the end.

    python3 tests/bench/gpu_load.py --seconds 40 --ready /tmp/load.ready

Keep NCCL_NVLS_ENABLE=0 (the device machine's rule: no NVLink multicast); this script sets it
when unset.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

ALLREDUCE_MIB = 64
H2D_MIB = 256
MATMULS_PER_STEP = 20


def worker(rank: int, world: int, seconds: float, ready: str | None, port: int) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    if world > 1:
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}",
                                rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn_like(a)
    buf = torch.ones(ALLREDUCE_MIB * 2**20 // 2, device="cuda", dtype=torch.bfloat16)
    host = torch.empty(H2D_MIB * 2**20, dtype=torch.uint8).pin_memory()
    dev = torch.empty_like(host, device="cuda")
    copy_stream = torch.cuda.Stream()

    def step() -> None:
        for _ in range(MATMULS_PER_STEP):
            a @ b
        with torch.cuda.stream(copy_stream):
            dev.copy_(host, non_blocking=True)
        if world > 1:
            dist.all_reduce(buf)
        torch.cuda.synchronize()

    for _ in range(3):  # warm-up: NCCL channels, cuBLAS heuristics
        step()
    if world > 1:
        dist.barrier()
    if rank == 0 and ready:
        Path(ready).write_text(str(time.time()))
    steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step()
        steps += 1
    elapsed = time.perf_counter() - t0
    # NCCL ring all-reduce: each rank sends 2 (n-1)/n of the buffer per call.
    sent = steps * ALLREDUCE_MIB * 2**20 * 2 * (world - 1) / world if world > 1 else 0
    print(json.dumps({
        "rank": rank, "steps": steps, "seconds": round(elapsed, 3),
        "matmul_tflops": round(steps * MATMULS_PER_STEP * 2 * 8192**3 / elapsed / 1e12, 1),
        "allreduce_tx_bytes_s": round(sent / elapsed), "h2d_bytes_s":
            round(steps * H2D_MIB * 2**20 / elapsed),
    }), flush=True)
    if world > 1:
        dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--ready", default=None, help="file written when every rank is loaded")
    ap.add_argument("--gpus", type=int, default=0, help="0: every visible GPU")
    ap.add_argument("--port", type=int, default=29533)
    ns = ap.parse_args()
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
    import torch
    import torch.multiprocessing as mp

    world = ns.gpus or torch.cuda.device_count()
    if world < 1:
        raise SystemExit("gpu_load: no CUDA device visible")
    mp.spawn(worker, args=(world, ns.seconds, ns.ready, ns.port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
