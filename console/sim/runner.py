"""Process lifecycle of the simulated server: startup phases, GPU state, SIGTERM drain, crashes.

Exit semantics follow SGLang: a graceful SIGTERM drain exits 0 after the last request
finished; a crash (scheduler exception, OOM at startup) kills the whole process tree with
SIGKILL, so the launcher sees -9 (137 from a shell). SIGTERM before the server is up is not
handled (SGLang installs its handler on the first request) and kills the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import traceback
from typing import Any

import aiohttp
from aiohttp import web

from console.sim import gpu_state, shapes
from console.sim.config import SimConfig, all_prefixes, dp_layout, dp_ranks, leader_prefix
from console.sim.dp import DpEngine
from console.sim.engine import BaseEngine, Engine, IdealEngine, SimCrash
from console.sim.lateness import Lateness
from console.sim.logs import SimLog
from console.sim.model import KV_DTYPE_TORCH
from console.sim.procs import ProcGroup, listen_socket
from console.sim.server import SimState, build_app
from console.sim.speculative import RESET_WARNING

STATE_INTERVAL_S = 0.25
DRAIN_LOG_INTERVAL_S = 5.0
# The decode capture's share of the startup time, per captured size: SGLang captures each size
# in turn (decode_cuda_graph_runner.py:1324-1340, a warm-up run and a capture per size), so
# its capture time grows with the count; 12 sizes (the default ladder to 64) take 0.18.
CAPTURE_SHARE_PER_SIZE = 0.015


class Runner:
    def __init__(self, cfg: SimConfig, procs: ProcGroup | None = None) -> None:
        sa = cfg.server_args
        self.cfg = cfg
        self.procs = procs  # --sim-ideal-procs > 1: this process is one of several
        self.log = SimLog(log_level=sa["log_level"], log_level_http=sa.get("log_level_http"),
                          access_exclude=sa.get("uvicorn_access_log_exclude_prefixes"))
        metrics_on = bool(sa.get("enable_metrics"))
        engine_cls: type[BaseEngine] = (IdealEngine if cfg.sim.ideal else
                                         DpEngine if dp_ranks(sa) > 1 else Engine)
        self.engine = engine_cls(cfg, self.log, record_latencies=metrics_on)
        self.state = SimState(cfg=cfg, log=self.log, engine=self.engine, procs=procs)
        if cfg.sim.ideal:
            self.state.lateness = Lateness((cfg.sim.ideal_ttft_ms or 0.0) / 1000.0,
                                           (cfg.sim.ideal_itl_ms or 0.0) / 1000.0)
        if metrics_on:
            from console.sim.metrics import Metrics

            self.state.metrics = Metrics(cfg.served_model_name, cfg.profile.tp)
        self.phase = "starting"
        self.pid = os.getpid()
        self.gpu_mem_used_mib = 0.0
        self._stop = asyncio.Event()
        self._exit_code = 0
        self.sampler = gpu_state.GpuSampler(cfg, self.engine.stats)

    # ---- GPU state ----------------------------------------------------------------------------
    def _load(self) -> gpu_state.GpuLoad:
        now = asyncio.get_running_loop().time() if _loop_running() else time.monotonic()
        return self.sampler.sample(now, self.phase, running=len(self.engine.running),
                                   queued=len(self.engine.waiting),
                                   memory_used_mib=self.gpu_mem_used_mib)

    def write_state(self) -> None:
        sim = self.cfg.sim
        state = gpu_state.compute_state(
            self._load(), gpu_name=sim.gpu_name, num_gpus=sim.num_gpus,
            memory_total_mib=sim.gpu_memory_mib, pid=self.pid)
        try:
            gpu_state.write_state(sim.state_file, state)
        except OSError as exc:  # telemetry is best effort; the server keeps serving
            self.log.raw(f"plateau-sim: cannot write GPU state file {sim.state_file}: {exc}")

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self.write_state()

    async def _state_loop(self) -> None:
        while True:
            await asyncio.sleep(STATE_INTERVAL_S)
            self.write_state()

    # ---- startup ------------------------------------------------------------------------------
    async def _pause(self, fraction: float) -> None:
        seconds = self.cfg.sim.startup_seconds * fraction
        if seconds > 0:
            await asyncio.sleep(seconds)

    def _ranks(self) -> list[str]:
        return all_prefixes(self.cfg.server_args)

    def _leaders(self) -> list[str]:
        """Each DP rank's scheduler that prints its sizing and batch lines."""
        sa = self.cfg.server_args
        return [leader_prefix(sa, d) for d in range(dp_ranks(sa))]

    def _launch_dp_lines(self) -> None:
        """Replicas (not attention DP): the controller's `Launch DP{k} starting at GPU
        #{base}.` per replica (0.5.23 data_parallel_controller.py:687), no rank prefix."""
        sa = self.cfg.server_args
        replicas, attn = dp_layout(sa)
        if replicas < 2 or attn > 1:
            return
        step = self.cfg.profile.tp * max(1, int(sa.get("pp_size") or 1))
        for k in range(replicas):
            self.log.sglang(f"Launch DP{k} starting at GPU #{k * step}.")

    def _crash_startup(self, lines: list[str], code: int = 1) -> None:
        for prefix in self._ranks()[:1]:
            self.log.sglang("Scheduler hit an exception: " + "\n".join(lines), prefix)
        self.log.sglang(f"Rank 0 scheduler died during initialization (exit code: {code}). If "
                        "exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run "
                        "dmesg -T | grep -i oom to check.")
        self._die()

    def _die(self) -> None:
        self.phase = "stopped"
        self.gpu_mem_used_mib = 0.0
        self.write_state()
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    async def startup(self) -> dict[str, Any]:
        cfg = self.cfg
        sa = cfg.server_args
        p = cfg.profile
        log = self.log
        ranks = self._ranks()
        total_gb = p.gpu_memory_gb
        traits = cfg.traits
        if cfg.spec_running_reset:  # speculative_hook.py:1086-1094, before server_args
            log.warning(RESET_WARNING)
        log.sglang(shapes.server_args_line(traits, cfg.logged_server_args()))
        self._launch_dp_lines()
        self.set_phase("loading")
        t0 = time.monotonic()
        for prefix in ranks:
            log.sglang(shapes.init_begin(traits), prefix)
        await self._pause(0.05)
        for prefix in ranks:
            for line in shapes.init_end(traits, time.monotonic() - t0, 0.52):
                log.sglang(line, prefix)
        if p.tp > 1 and traits.startup_timings:  # 0.5.x distributed/bootstrap.py (not 0.4.10)
            for prefix in ranks:
                log.sglang(f"NCCL/RCCL/HCCL warmup completed in 0.412s (tp_size={p.tp}, "
                           f"pp_size=1, ep_size={sa.get('ep_size') or 1})", prefix)
        self.gpu_mem_used_mib = gpu_state.CONTEXT_MIB
        avail = total_gb - 0.55
        for prefix in ranks:
            log.sglang(f"Load weight begin. avail mem={avail:.2f} GB", prefix)
        t_load = time.monotonic()
        weights = p.weight_gb_per_gpu
        steps = 5
        for i in range(steps):
            await self._pause(0.40 / steps)
            self.gpu_mem_used_mib = gpu_state.CONTEXT_MIB + weights * 1024 * (i + 1) / steps
        if weights > avail:
            self._crash_startup([
                "Traceback (most recent call last):",
                '  File "sglang/srt/model_executor/model_runner.py", line 1301, in load_model',
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                f"{min(weights, 4.0):.2f} GiB. GPU 0 has a total capacity of "
                f"{cfg.sim.gpu_memory_mib / 1024:.2f} GiB of which 0.19 GiB is free. Including "
                "non-PyTorch memory, this process has "
                f"{cfg.sim.gpu_memory_mib / 1024 - 0.19:.2f} GiB memory in use.",
            ])
        load_s = time.monotonic() - t_load
        avail -= weights
        for prefix in ranks:
            log.sglang(shapes.load_weight_end(
                traits, elapsed=load_s, arch=cfg.sim.arch, quant=sa.get("quantization"),
                avail=avail, usage=weights), prefix)
        t_kv = time.monotonic()
        tokens = p.max_total_num_tokens
        if tokens <= 0 or p.kv_pool_gb <= 0:
            self._crash_startup([
                "Traceback (most recent call last):",
                '  File "sglang/srt/model_executor/pool_configurator.py", line 96, in configure',
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: mem_fraction_static={sa['mem_fraction_static']}",
            ])
        kv_gb = tokens * p.kv_bytes_per_token_per_gpu / 2**30
        dtype = KV_DTYPE_TORCH.get(p.kv_cache_dtype, "torch.bfloat16")
        await self._pause(0.05)
        avail -= kv_gb
        self.gpu_mem_used_mib += kv_gb * 1024
        for prefix in ranks:
            log.sglang(shapes.kv_allocated(traits, dtype, tokens, kv_gb / 2), prefix)
            log.sglang(f"Memory pool end. avail mem={avail:.2f} GB", prefix)
        kv_s = time.monotonic() - t_kv
        if cfg.running_cap_reduced is not None and traits.running_cap_warning:
            requested, effective = cfg.running_cap_reduced
            for prefix in ranks:  # kv_cache_configurator.py resolve_max_num_reqs
                log.warning(f"max_running_requests was reduced from the requested {requested} to "
                            f"{effective} (per dp worker) due to the available KV cache capacity.",
                            prefix)
        self.set_phase("capturing")
        self._flag_warnings(ranks)
        graph = {"prefill": 0.0, "decode": 0.0, "target_verify": 0.0, "draft_prefill": 0.0,
                 "draft_decode": 0.0, "draft_extend": 0.0}
        if sa["cuda_graph_backend_prefill"] != "disabled":
            t_g = time.monotonic()
            sizes = [n for n in (512, 1024, 2048, 4096, 8192, 16384)
                     if n <= int(sa["cuda_graph_max_bs_prefill"])]
            for prefix in ranks:
                log.sglang(shapes.prefill_capture_begin(sa["cuda_graph_backend_prefill"], sizes,
                                                        avail), prefix)
            await self._pause(0.12)
            avail -= 0.3
            graph["prefill"] = round(time.monotonic() - t_g, 2)
            for prefix in ranks:
                log.sglang(shapes.prefill_capture_end(graph["prefill"], 0.30, avail), prefix)
        if sa["cuda_graph_backend_decode"] != "disabled":
            avail = await self._capture_decode(ranks, avail, graph)
        self.gpu_mem_used_mib += (0.3 + p.graph_gb) * 1024
        for leader in self._leaders():  # TP0 of each DP rank (startup.py's sizing line)
            log.sglang(
                f"max_total_num_tokens={tokens}, chunked_prefill_size="
                f"{sa['chunked_prefill_size']}, max_prefill_tokens={sa['max_prefill_tokens']}, "
                f"max_running_requests={cfg.max_running_requests}, context_len="
                f"{cfg.context_len}, available_gpu_mem={avail:.2f} GB", leader)
        scheduler_e2e = time.monotonic() - t0
        graph_text = ", ".join(f"{k}={v:.2f}" for k, v in graph.items())
        if traits.startup_timings:  # 0.5.x entrypoints/engine.py
            log.sglang(f"Engine startup timings (s): load_weight={load_s:.2f}, "
                       f"kv_cache_allocation={kv_s:.2f}, scheduler_e2e={scheduler_e2e:.2f}, "
                       f"cuda_graph={{{graph_text}}}, tokenizer_e2e={scheduler_e2e + 0.4:.2f}")
        return {"load_weight": round(load_s, 2), "kv_cache_allocation": round(kv_s, 2),
                "scheduler_e2e": round(scheduler_e2e, 2), "cuda_graph": graph,
                "tokenizer_e2e": round(scheduler_e2e + 0.4, 2)}

    async def _capture_decode(self, ranks: list[str], avail: float,
                              graph: dict[str, float]) -> float:
        """The decode capture as the version writes it: begin line, tqdm bar (TP0's stderr),
        end line; returns the memory left."""
        traits = self.cfg.traits
        p = self.cfg.profile
        backend = self.cfg.server_args["cuda_graph_backend_decode"]
        t_g = time.monotonic()
        bs = p.decode_ladder
        if traits.capture == "single":  # 0.4.10 cuda_graph_runner.py:238, on rank 0
            self.log.sglang(shapes.capture_bs_line(bs), ranks[0])
        # Under speculative decoding the target captures verify graphs of verify_tokens per
        # request (cuda_graph_setup.py:746-762) and times them as target_verify.
        width = p.verify_tokens if p.speculative else None
        key = "target_verify" if p.speculative else "decode"
        for prefix in ranks:
            self.log.sglang(shapes.decode_capture_begin(traits, backend, bs, avail, width),
                            prefix)
        await self._pause(CAPTURE_SHARE_PER_SIZE * len(bs))
        graph[key] = round(time.monotonic() - t_g, 2)
        self.log.raw(shapes.capture_progress(bs, avail - 0.02, graph[key]))
        avail -= p.graph_gb
        for prefix in ranks:
            self.log.sglang(shapes.decode_capture_end(traits, bs, graph[key], p.graph_gb,
                                                      avail, width), prefix)
        return avail

    def _flag_warnings(self, ranks: list[str]) -> None:
        sa = self.cfg.server_args
        log = self.log
        if sa.get("moe_runner_backend") == "triton":
            name = self.cfg.sim.gpu_name.replace(" ", "_")
            for prefix in ranks:
                log.warning(
                    "Using default MoE kernel config. Performance might be sub-optimal! Config "
                    "file not found at /usr/local/lib/python3.11/dist-packages/sglang/srt/layers/"
                    "moe/moe_runner/triton_utils/configs/triton_3_5_1/E=128,N=768,device_name="
                    f"{name}.json, you can create them with https://github.com/sgl-project/sglang/"
                    "tree/main/benchmark/kernels/fused_moe_triton", prefix)
        prefill = sa.get("prefill_attention_backend")
        decode = sa.get("decode_attention_backend")
        if prefill and decode and prefill != decode:
            log.warning(
                "Warning: Attention backend specified by --attention-backend or default backend "
                "might be overridden.The feature of hybrid attention backend is experimental and "
                "unstable. Please raise an issue if you encounter any problem.", ranks[0])
        if sa.get("kv_cache_dtype", "auto").startswith("fp8") and not sa.get(
                "quantization_param_path"):
            log.warning("Using FP8 KV cache but no scaling factors provided. Defaulting to "
                        "scaling factors of 1.0. This may lead to less accurate results!",
                        ranks[0])

    # ---- serving ------------------------------------------------------------------------------
    async def _warmup(self, base: str) -> None:
        if self.cfg.server_args.get("skip_server_warmup"):
            return
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/model_info") as resp:
                await resp.read()
            payload = {"text": "The capital city of France is",
                       "sampling_params": {"temperature": 0, "max_new_tokens": 8}}
            async with session.post(f"{base}/generate", json=payload) as resp:
                await resp.read()
            async with session.post(f"{base}/freeze_gc") as resp:
                await resp.read()

    async def serve(self) -> int:
        loop = asyncio.get_running_loop()
        state_task = asyncio.create_task(self._state_loop())
        loop.add_signal_handler(signal.SIGTERM, self._early_sigterm)
        self.set_phase("starting")
        self.state.startup_time = await self.startup()
        sa = self.cfg.server_args
        host, port = sa["host"], int(sa["port"])
        app = build_app(self.state)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        log = self.log
        log.uvicorn(f"Started server process [{self.pid}]")
        log.uvicorn("Waiting for application startup.")
        log.uvicorn("Application startup complete.")
        site = web.TCPSite(runner, host, port, backlog=4096, reuse_address=True,
                           reuse_port=True if self.procs else None)
        try:
            await site.start()
        except OSError as exc:
            log.uvicorn(f"[Errno {exc.errno}] error while attempting to bind on address "
                        f"('{host}', {port}): {exc.strerror.lower() if exc.strerror else exc}",
                        "ERROR")
            log.uvicorn("Waiting for application shutdown.")
            log.uvicorn("Application shutdown complete.")
            self._die()
        log.uvicorn(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
        engine_task = asyncio.create_task(self.engine.run())
        engine_task.add_done_callback(self._engine_done)
        await self._warmup(f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}")
        self.state.status = "ready"
        self.set_phase("ready")
        if (warmup := getattr(self.engine, "warmup", None)) is not None:
            warmup.begin()  # SGLang's own warm-up request was part of the startup
        loop.add_signal_handler(signal.SIGTERM, self._sigterm)
        loop.add_signal_handler(signal.SIGINT, self._sigint)
        if self.procs is not None:  # children answer /ready at once: only once this one is
            await self._start_siblings(runner)
        log.sglang("The server is fired up and ready to roll!")
        await self._stop.wait()
        log.uvicorn("Shutting down")
        await runner.cleanup()
        log.uvicorn("Waiting for application shutdown.")
        log.uvicorn("Application shutdown complete.")
        log.uvicorn(f"Finished server process [{self.pid}]")
        engine_task.cancel()
        state_task.cancel()
        if self.procs is not None:
            await self.procs.stop()
        self.phase = "stopped"
        self.gpu_mem_used_mib = 0.0
        self.write_state()
        return self._exit_code

    # ---- --sim-ideal-procs (console.sim.procs) -------------------------------------------------
    async def _start_siblings(self, runner: web.AppRunner) -> None:
        """Parent: register this process's admin port, let the children bind, wait for them."""
        assert self.procs is not None
        await self._admin_site(runner)
        self.procs.go()
        if not await self.procs.wait_registered():
            self.log.raw(f"plateau-sim: not every one of {self.procs.procs} processes came up; "
                         "serving with those that did")

    async def _admin_site(self, runner: web.AppRunner) -> None:
        """A private loopback port serving the same app, registered for the siblings."""
        assert self.procs is not None
        sock = listen_socket("127.0.0.1", 0)
        await web.SockSite(runner, sock).start()
        self.procs.register(sock.getsockname()[1])

    async def serve_child(self) -> int:
        """Child: serve the parent's port (SO_REUSEPORT) until SIGTERM, SIGINT or the parent
        goes. No startup, no log lines of its own beyond requests', no GPU state file."""
        procs = self.procs
        assert procs is not None
        loop = asyncio.get_running_loop()
        self.state.status = "ready"
        sa = self.cfg.server_args
        runner = web.AppRunner(build_app(self.state), access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, sa["host"], int(sa["port"]), backlog=4096, reuse_address=True,
                          reuse_port=True).start()
        engine_task = asyncio.create_task(self.engine.run())
        loop.add_signal_handler(signal.SIGTERM, self._child_sigterm)
        loop.add_signal_handler(signal.SIGINT, self._stop.set)
        loop.add_reader(procs.lifeline, self._parent_gone)
        await self._admin_site(runner)
        await self._stop.wait()
        await runner.cleanup()
        engine_task.cancel()
        return 0

    def _parent_gone(self) -> None:
        asyncio.get_running_loop().remove_reader(self.procs.lifeline)  # type: ignore[union-attr]
        self._stop.set()

    def _child_sigterm(self) -> None:
        if self.state.status != "draining":
            self.state.status = "draining"
            asyncio.get_running_loop().create_task(self._drain())

    def _early_sigterm(self) -> None:
        # SGLang has no SIGTERM handler before its first request: the default action kills it.
        self.phase = "stopped"
        self.gpu_mem_used_mib = 0.0
        self.write_state()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    def _sigint(self) -> None:
        self._stop.set()

    def _sigterm(self) -> None:
        if self.state.status == "draining":
            return
        self.log.warning("SIGTERM received. signum=None frame=None. Draining requests and "
                         "shutting down...")
        if os.environ.get("SGL_FORCE_SHUTDOWN", "").lower() in ("1", "true"):
            self.log.sglang("Signal SIGTERM received while force shutdown flag set. Force "
                            "exiting.")
            self._stop.set()
            return
        self.state.status = "draining"
        self.set_phase("draining")
        if self.procs is not None:
            self.procs.signal_children(signal.SIGTERM)  # each drains its own requests
        asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        """tokenizer_manager.py sigterm_watchdog: a line every 5 s while requests remain, and
        one more once none do (`Remaining number of requests 0`), then the exit."""
        next_log = time.monotonic()
        while True:
            remaining = [r for r in self.engine.requests()
                         if not r.rid.startswith("HEALTH_CHECK")]
            if not remaining or time.monotonic() >= next_log:
                self.log.sglang(shapes.draining(self.cfg.traits, [r.rid for r in remaining]))
                next_log += DRAIN_LOG_INTERVAL_S
            if not remaining:
                break
            await asyncio.sleep(0.05)
        self._stop.set()

    def _engine_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, SimCrash):
            lines = [
                "Traceback (most recent call last):",
                '  File "sglang/srt/managers/scheduler.py", line 6365, in run_scheduler_process',
                "    scheduler.event_loop_overlap()",
                '  File "sglang/srt/managers/scheduler.py", line 1712, in event_loop_overlap',
                "    self.process_batch_result(tmp_batch, tmp_result)",
                '  File "sglang/srt/layers/sampler.py", line 142, in forward',
                "    raise ValueError(\"Detected errors during sampling! NaN in the logits.\")",
                "ValueError: Detected errors during sampling! NaN in the logits.",
            ]
        else:
            lines = traceback.format_exception(exc)
        for prefix in self._ranks()[:1]:
            self.log.sglang("Scheduler hit an exception: " + "\n".join(lines), prefix)
        self.log.sglang("SIGQUIT received. signum=None, frame=None. It usually means one child "
                        "failed.")
        self._die()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def child_main(cfg: SimConfig, procs: ProcGroup) -> int:
    """One of the `--sim-ideal-procs` children (console.sim.procs)."""
    return await Runner(cfg, procs).serve_child()


async def amain(cfg: SimConfig, procs: ProcGroup | None = None) -> int:
    runner = Runner(cfg, procs)
    try:
        return await runner.serve()
    finally:
        if procs is not None:
            procs.cleanup()
        with contextlib.suppress(Exception):
            if runner.phase != "stopped":
                runner.phase = "stopped"
                runner.gpu_mem_used_mib = 0.0
                runner.write_state()
