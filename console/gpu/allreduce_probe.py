"""All-reduce probe, run on a GPU host as a program of its own (shipped by
console/jobs/allreduce.py, or run by hand): `python3 allreduce_probe.py --hidden 7168
--batches 16,64 --dtype bfloat16 [--ranks 2,4,8] [--seconds 120]`.

It times what a decode step's all-reduces cost at the model's message sizes (hidden size x
batch x dtype bytes, one message per all-reduce, two per layer): NCCL (eager, and captured in
a CUDA graph as SGLang's decode runs it) and a one-shot all-reduce through torch's symmetric
memory (the class of kernel SGLang's custom all-reduce is: every rank reads every peer's
buffer once over P2P) over 2, 4 and 8 of the visible GPUs, with the topology they are joined
by (`nvidia-smi topo -m`). With one GPU it says what it cannot measure (any multi-GPU
all-reduce) and measures what it can: the message sizes, a 1-rank NCCL all-reduce's floor (the
launch and NCCL's own overhead with no wire), and the device's copy bandwidth.

Standard library and torch only (no Plateau on the host). Bounded: `--seconds` caps the whole
run; each phase is skipped once the budget is spent, and says so. The output is one JSON object
on stdout (the console reads it as untrusted: console/jobs/allreduce.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
WARMUP = 10


def message_sizes(hidden: int, batches: list[int], dtype: str) -> list[dict[str, int]]:
    return [{"batch": b, "bytes": hidden * b * DTYPE_BYTES[dtype]} for b in batches]


def topology() -> dict[str, Any]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"nvlink": None, "matrix": None, "why": "no nvidia-smi"}
    try:
        out = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, timeout=20,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return {"nvlink": None, "matrix": None, "why": str(exc)[:200]}
    lines = [line.rstrip() for line in out.splitlines() if line.strip()][:24]
    links = " ".join(line for line in lines if line.startswith("GPU"))
    return {"nvlink": " NV" in links if links else None, "matrix": "\n".join(lines)[:4000]}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _time_us(fn: Any, torch: Any, iters: int) -> float:
    """Median microseconds of `fn()` over `iters` runs, each timed by CUDA events."""
    for _ in range(WARMUP):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    times.sort()
    return round(float(times[len(times) // 2]), 2)


def _graphed(fn: Any, torch: Any) -> Any:
    """`fn` captured in a CUDA graph (as SGLang's decode runs its all-reduces)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def _rank_main(rank: int, ranks: int, port: int, sizes: list[int], dtype: str, iters: int,
               out_dir: str) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks)
    rows: list[dict[str, Any]] = []
    try:
        for nbytes in sizes:
            x = torch.ones(nbytes // DTYPE_BYTES[dtype], dtype=getattr(torch, dtype),
                           device="cuda")
            row: dict[str, Any] = {"ranks": ranks, "bytes": nbytes}
            row["nccl_eager_us"] = _time_us(lambda x=x: dist.all_reduce(x), torch, iters)
            try:
                row["nccl_graph_us"] = _time_us(_graphed(lambda x=x: dist.all_reduce(x), torch),
                                                torch, iters)
            except Exception as exc:
                row["nccl_graph_why"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            row.update(_one_shot(torch, dist, x, iters))
            rows.append(row)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(os.path.join(out_dir, f"ranks{ranks}.json"), "w") as handle:
            json.dump(rows, handle)


def _one_shot(torch: Any, dist: Any, x: Any, iters: int) -> dict[str, Any]:
    """A one-shot all-reduce over symmetric memory (torch >= 2.5), where P2P allows it."""
    try:
        import torch.distributed._symmetric_memory as symm_mem

        buf = symm_mem.empty(x.numel(), dtype=x.dtype, device=x.device)
        symm_mem.rendezvous(buf, dist.group.WORLD.group_name)
        buf.copy_(x)
        op = torch.ops.symm_mem.one_shot_all_reduce
        name = dist.group.WORLD.group_name
        return {"one_shot_us": _time_us(lambda: op(buf, "sum", name), torch, iters)}
    except Exception as exc:
        return {"one_shot_why": f"{type(exc).__name__}: {str(exc)[:160]}"}


def multi_gpu(torch: Any, ranks: int, sizes: list[int], dtype: str, iters: int,
              seconds: float) -> dict[str, Any]:
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="plateau-allreduce-") as out_dir:
        ctx = mp.get_context("spawn")
        port = _free_port()
        procs = [ctx.Process(target=_rank_main, args=(r, ranks, port, sizes, dtype, iters,
                                                      out_dir)) for r in range(ranks)]
        for proc in procs:
            proc.start()
        deadline = time.monotonic() + seconds
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        if any(proc.is_alive() for proc in procs):
            for proc in procs:
                proc.kill()
            return {"ranks": ranks, "why": f"did not finish within {seconds:.0f} s"}
        path = os.path.join(out_dir, f"ranks{ranks}.json")
        if not os.path.exists(path):
            codes = [proc.exitcode for proc in procs]
            return {"ranks": ranks, "why": f"a rank failed (exit codes {codes})"}
        with open(path) as handle:
            return {"ranks": ranks, "rows": json.load(handle)}


def _nccl_version(torch: Any) -> str | None:
    """NCCL's version as torch was built with it; None without NCCL."""
    try:
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_nccl_available():
            return None
        version = torch.cuda.nccl.version()
    except Exception:  # a torch built without CUDA or NCCL
        return None
    return ".".join(map(str, version)) if isinstance(version, tuple) else str(version)


def single_gpu(torch: Any, sizes: list[int], dtype: str, iters: int) -> dict[str, Any]:
    """What one GPU can say: a 1-rank NCCL all-reduce's floor and the copy bandwidth."""
    import torch.distributed as dist

    out: dict[str, Any] = {}
    torch.cuda.set_device(0)
    try:
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0,
                                world_size=1)
        floor = []
        for nbytes in sizes:
            x = torch.ones(nbytes // DTYPE_BYTES[dtype], dtype=getattr(torch, dtype),
                           device="cuda")
            row: dict[str, Any] = {
                "bytes": nbytes,
                "eager_us": _time_us(lambda x=x: dist.all_reduce(x), torch, iters)}
            try:
                row["graph_us"] = _time_us(_graphed(lambda x=x: dist.all_reduce(x), torch),
                                           torch, iters)
            except Exception as exc:
                row["graph_why"] = f"{type(exc).__name__}: {str(exc)[:160]}"
            floor.append(row)
        out["nccl_1rank"] = floor
        dist.destroy_process_group()
    except Exception as exc:
        out["nccl_1rank_why"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    src = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = _time_us(lambda: dst.copy_(src), torch, 20)
    out["memcpy_d2d_gbps"] = round(2 * src.numel() / (us * 1e-6) / 1e9, 1)  # read + write
    empty = torch.empty(1, device="cuda")
    out["kernel_launch_us"] = _time_us(lambda: empty.add_(0), torch, 200)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="time decode-sized all-reduces on this host")
    p.add_argument("--hidden", type=int, required=True, help="the model's hidden size")
    p.add_argument("--batches", default="16,64", help="decode batches (the sweep's levels)")
    p.add_argument("--dtype", default="bfloat16", choices=sorted(DTYPE_BYTES))
    p.add_argument("--ranks", default="2,4,8", help="GPU counts to all-reduce over")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--seconds", type=float, default=120.0, help="the whole run's budget")
    args = p.parse_args(argv)
    started = time.monotonic()
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    messages = message_sizes(args.hidden, batches, args.dtype)
    sizes = [m["bytes"] for m in messages]
    report: dict[str, Any] = {"version": 1, "hidden": args.hidden, "dtype": args.dtype,
                              "messages": messages, "topology": topology(), "cannot": []}
    try:
        import torch
    except ImportError:
        report["cannot"].append("no torch on this host: nothing measured (the console "
                                "estimates all-reduce costs from priors over the step times)")
        print(json.dumps(report))
        return 0
    report["torch"] = str(torch.__version__)
    report["nccl"] = _nccl_version(torch)
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    report["gpus"] = [{"index": i, "name": torch.cuda.get_device_name(i),
                       "memory_gib": round(torch.cuda.get_device_properties(i).total_memory
                                           / 2**30, 1)} for i in range(count)]
    if count == 0 or report["nccl"] is None:
        report["cannot"].append("no CUDA GPU with NCCL visible to torch: nothing measured")
        print(json.dumps(report))
        return 0
    report["single_gpu"] = single_gpu(torch, sizes, args.dtype, args.iters)
    wanted = [int(r) for r in args.ranks.split(",") if r.strip()]
    report["allreduce"] = []
    for ranks in wanted:
        left = args.seconds - (time.monotonic() - started)
        if ranks > count:
            report["cannot"].append(
                f"all-reduce over {ranks} GPUs (NCCL vs one-shot): {count} GPU(s) visible")
        elif left < 5:
            report["cannot"].append(f"all-reduce over {ranks} GPUs: the time budget ran out")
        else:
            report["allreduce"].append(multi_gpu(torch, ranks, sizes, args.dtype, args.iters,
                                                 left))
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
