"""The demo host: this machine, a simulated 8-GPU Blackwell box served by `console.sim`."""

from __future__ import annotations

import socket
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the models (pydantic) come after the demo console's first frame
    from console.config_models import PlateauConfig, ServerProfile

DEMO_HOST = "demo"
DEMO_MODEL = "demo/Example-MoE-NVFP4"
DEMO_PROFILE = "cutlass-moe"
"""The demo host's profile: the one its server starts with (the header names it at once)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# How the demo's restarts behave like a real host's (console/sim/warmup.py, noise.py): a fresh
# server warms up (runtime JIT, slow first steps) and each boot draws its kernel speed within
# +-2 %. On for the demo console and `plateau ab --demo`; the other demo commands, and the
# tests that need the same figures from the first request, leave it off.
REAL_RESTARTS: dict[str, str | int | float | bool] = {"sim-warmup": True,
                                                      "sim-boot-spread": 0.02}

DEMO_STARTUP_S = 4.0
"""The simulated server's start-up time in the demo (a tune's demo starts it at once)."""


def demo_profiles(
    port: int, state_file: Path, startup_seconds: float = DEMO_STARTUP_S, *,
    real_restarts: bool = False,
) -> dict[str, ServerProfile]:
    """Two profiles whose only difference is the MoE runner, so A/B has something to show.
    Built from this code's constants (`built_in`: no validation before the first frame).

    Both are the reference host: 8x RTX PRO 6000 on PCIe (no NVLink), an NVFP4 MoE at TP8
    (~1.5 TB as bf16), decode CUDA graphs captured up to batch 64, and NCCL_P2P_DISABLE=1 (the
    usual workaround for NCCL P2P hangs on these boards, local-inference-lab/rtx6kpro#15).
    With the default sweep it plateaus at ~64 the way the reference did (console/sim/model.py).
    """
    from console.config_models import ServerProfile, built_in

    launch = [sys.executable, "-m", "console.sim"]
    common: dict[str, str | int | float | bool] = {
        "tp-size": 8,
        "quantization": "modelopt_fp4",
        "mem-fraction-static": 0.85,
        "cuda-graph-max-bs-decode": 64,
        "enable-metrics": True,
        "decode-log-interval": 10,
        "sim-weights-gb": 1560,
        "sim-startup-seconds": startup_seconds,
        "sim-state-file": str(state_file),
        **(REAL_RESTARTS if real_restarts else {}),
    }
    env = {"NCCL_P2P_DISABLE": "1"}
    return {
        "triton-moe": built_in(
            ServerProfile,
            description="simulated NVFP4 MoE, Triton MoE runner",
            launch=launch,
            model_path=DEMO_MODEL,
            port=port,
            flags={**common, "moe-runner-backend": "triton"},
            env=env,
        ),
        DEMO_PROFILE: built_in(
            ServerProfile,
            description="simulated NVFP4 MoE, CUTLASS MoE runner",
            launch=launch,
            model_path=DEMO_MODEL,
            port=port,
            flags={**common, "moe-runner-backend": "cutlass"},
            env=env,
        ),
    }


def demo_config(
    run_dir: Path,
    port: int | None = None,
    startup_seconds: float = DEMO_STARTUP_S,
    seed: int | None = None,
    *,
    real_restarts: bool = False,
) -> PlateauConfig:
    """A config with one local host running the simulator under `run_dir` (`seed` makes the
    simulator deterministic; `real_restarts`: REAL_RESTARTS)."""
    from console.config_models import HostConfig, PlateauConfig, SweepPreset, built_in

    chosen_port = port or free_port()
    profiles = demo_profiles(chosen_port, run_dir / "gpu-state.json", startup_seconds,
                             real_restarts=real_restarts)
    if seed is not None:
        profiles = {
            name: profile.model_copy(update={"flags": {**profile.flags, "sim-seed": seed}})
            for name, profile in profiles.items()
        }
    return built_in(
        PlateauConfig,
        default_host=DEMO_HOST,
        hosts=[
            built_in(
                HostConfig,
                name=DEMO_HOST,
                local=True,
                python=sys.executable,
                run_dir=str(run_dir),
                profile=DEMO_PROFILE,
                sim_state_file=str(run_dir / "gpu-state.json"),
            )
        ],
        profiles=profiles,
        sweeps={
            # The reference run: 256 in / 128 out, one wave per concurrency (it ran 128 prompts
            # at concurrency 128). Real time: about two and a half minutes.
            "default": built_in(
                SweepPreset,
                concurrency=[16, 32, 64, 128],
                input_len=256,
                output_len=128,
                prompts_per_concurrency=1,
            ),
            "quick": built_in(
                SweepPreset, concurrency=[1, 4, 16], input_len=64, output_len=32,
                prompts_per_concurrency=2,
            ),
        },
    )


def temp_demo(
    seed: int | None = None, startup_seconds: float = DEMO_STARTUP_S,
    run_dir: Path | None = None,
    *, real_restarts: bool = False,
) -> tuple[PlateauConfig, Path]:
    """A demo config whose run dir (logs, GPU state, history) is `run_dir` or a new temp dir."""
    directory = run_dir or Path(tempfile.mkdtemp(prefix="plateau-demo-"))
    directory.mkdir(parents=True, exist_ok=True)
    return demo_config(directory, startup_seconds=startup_seconds, seed=seed,
                       real_restarts=real_restarts), directory


def demo_profile(config: PlateauConfig) -> str:
    return config.host(DEMO_HOST).profile or next(iter(config.profiles))
