"""The simulator's command line: one SGLang version's `launch_server` parser plus `--sim-*`.

The SGLang part is rebuilt from console/sglang/data/options-<version>.json (0.5.23: Appendix A
of the reference, all 531 options in argparse order with their exact choices; 0.5.18 and
0.4.10: those releases' own parsers, console/sglang/flags.py says how), so prefix abbreviation
(`--tp 8`), ambiguity errors (`--cuda-graph-max-bs`), unknown flags (`--nsa-decode-backend`)
and `--help` behave like the real parser. `--sim-*` options are pulled out of argv *before*
the SGLang parser sees it, so they cannot change SGLang's abbreviation behaviour, and they
are not listed in `--help` (use `--sim-help`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.sglang import flags as sglang_flags
from console.sglang.versions import DEFAULT_VERSION, KNOWN_VERSIONS, traits_for

PROG = "sglang serve"

# A few real help strings (docs/sglang.md §1.5); the rest of the options print without help text.
HELP: dict[str, str] = {
    "--model-path": "The path of the model weights. This can be a local folder or a Hugging "
    "Face repo ID.",
    "--tp-size": "The tensor parallelism size.",
    "--ep-size": "The expert parallelism size.",
    "--attention-backend": "Choose the kernels for attention layers.",
    "--kv-cache-dtype": 'Data type for kv cache storage. "auto" will use model data type.',
    "--disable-cuda-graph": "Deprecated. Use --cuda-graph-backend-{decode,prefill}=disabled "
    "instead.",
    "--enable-dp-attention": "Deprecated. Use --attn-dp-size <dp-size> instead.",
}

DEPRECATION: dict[str, str] = {
    "--disable-cuda-graph": "'--disable-cuda-graph' is deprecated and will be removed in a future "
    "release. Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.",
    "--enable-dp-attention": "'--enable-dp-attention' is deprecated and will be removed in a "
    "future release. Use '--attn-dp-size <dp-size>' instead.",
    "--monokernel-backend": "'--monokernel-backend' is deprecated and will be removed in a "
    "future release. Use '--enable-amd-monokernel' instead.",
}


def human_readable_int(value: str) -> int:
    """SGLang accepts `64k`, `1M`, `1.5G` for token counts."""
    text = value.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    if scale != 1:
        text = text[:-1]
    try:
        return int(float(text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid human-readable int: {value!r}") from None


def _json_list(value: str) -> list[Any]:
    parsed = json.loads(value)
    if not isinstance(parsed, list):
        raise argparse.ArgumentTypeError(f"expected a JSON list: {value!r}")
    return parsed


def _nullable_str(value: str) -> str | None:
    return None if value.lower() in ("", "none", "null") else value


_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "human_readable_int": human_readable_int,
    "nullable_str": _nullable_str,
    "loads": json.loads,
    "json_list_type": _json_list,
    "parse_cuda_graph_backend_arg": str,
    "parse_cuda_graph_config_arg": json.loads,
}


def _warn_deprecated(message: str) -> None:
    """arg_groups/argparse_actions.py print_deprecated_warning (0.5.18, 0.5.23):
    `logger.warning(f"\\033[1;33m{message}\\033[0m")` before logging is configured, so
    Python's last-resort handler writes the bare message to stderr."""
    print(f"\033[1;33m{message}\033[0m", file=sys.stderr)


def _replacement(new_flag: str | None) -> str:
    return f" Use '{new_flag}' instead." if new_flag else ""


class _DeprecatedFlag(argparse.Action):
    """Accepted, prints SGLang's yellow deprecation line, stores True (or the value)."""

    def __init__(self, option_strings: list[str], dest: str, new_flag: str | None = None,
                 const_value: Any = None, **kwargs: Any) -> None:
        kwargs.setdefault("nargs", 0)
        self.new_flag = new_flag
        self.const_value = const_value
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        message = DEPRECATION.get(self.option_strings[0]) or (
            f"'{option_string}' is deprecated and will be removed in a future release."
            f"{_replacement(self.new_flag)}")
        _warn_deprecated(message)
        if self.const_value is not None:
            value: Any = self.const_value
        else:
            value = values if values not in (None, []) or self.nargs == "+" else True
        setattr(namespace, self.dest, value)


class _RetiredFlag(argparse.Action):
    """0.5.18 argparse_actions.py DeprecatedAction: accepted, warns, stores nothing."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        kwargs["nargs"] = 0
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        _warn_deprecated(f"The command line argument '{option_string}' is deprecated and will "
                         "be removed in future versions.")


def option_rows(version: str | None = None) -> list[dict[str, Any]]:
    return list(sglang_flags.options(version or DEFAULT_VERSION))


def _typed(kwargs: dict[str, Any], spec: str, choices: list[str] | None) -> None:
    base, _, nargs = spec.partition(" nargs=")
    kwargs["type"] = _TYPES.get(base, str)
    if nargs:
        kwargs["nargs"] = nargs
    if choices:
        kwargs["choices"] = choices


def _row_kwargs(row: dict[str, Any], names: list[str]) -> tuple[list[str], dict[str, Any]]:
    kind: str = row["type"]
    kwargs: dict[str, Any] = {"default": row["default"], "help": HELP.get(names[0]),
                              "dest": row.get("dest") or names[0][2:].replace("-", "_")}
    if names[0] == "--model-path":
        kwargs["required"] = True
    if kind == "flag":
        kwargs["action"] = "store_true"
    elif kind == "flag/--no-":
        names = [n for n in names if not n.startswith("--no-")]
        kwargs["action"] = argparse.BooleanOptionalAction
    elif kind == "deprecated":
        kwargs.update(action=_DeprecatedFlag, new_flag=row.get("new_flag"))
        if row["choices"]:
            kwargs["nargs"] = "?"
            kwargs["choices"] = row["choices"]
    elif kind == "deprecated-const":
        kwargs.update(action=_DeprecatedFlag, new_flag=row.get("new_flag"),
                      const_value=row.get("const"))
    elif kind.startswith("deprecated-alias "):
        kwargs.update(action=_DeprecatedFlag, new_flag=row.get("new_flag"), nargs=None)
        _typed(kwargs, kind.removeprefix("deprecated-alias "), row["choices"])
    elif kind == "retired":
        kwargs["action"] = _RetiredFlag
    else:
        _typed(kwargs, kind, row["choices"])
    if kwargs.get("action") in (_DeprecatedFlag, _RetiredFlag) and kwargs["default"] is None:
        kwargs.pop("default")  # several options share one dest: the first default stands
    return names, kwargs


def build_sglang_parser(version: str | None = None) -> argparse.ArgumentParser:
    """A parser with the exact option names, aliases, types and choices of SGLang `version`."""
    parser = argparse.ArgumentParser(prog=traits_for(version or DEFAULT_VERSION).prog)
    for row in option_rows(version):
        names, kwargs = _row_kwargs(row, list(row["names"]))
        parser.add_argument(*names, **kwargs)
    return parser


# --------------------------------------------------------------------------- sim-only options


def default_state_file() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    return os.path.join(base, f"plateau-sim-{os.getuid()}", "gpu-state.json")


def build_sim_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m console.sim",
        description="Plateau simulator options (not SGLang). Everything else on the command "
        "line is parsed as `sglang serve` would.",
        allow_abbrev=False,
        add_help=False,
    )
    p.add_argument("--sim-help", action="store_true", help="show these options and exit")
    p.add_argument("--sim-seed", type=int, default=None, help="seed: deterministic runs")
    p.add_argument("--sim-sglang-version", default=DEFAULT_VERSION, choices=KNOWN_VERSIONS,
                   help="the SGLang release to play: its flags, its log lines, its /server_info "
                   f"version (default {DEFAULT_VERSION})")
    p.add_argument("--sim-ideal-ttft-ms", type=float, default=None,
                   help="ideal-timing mode: fixed time to first token (no model, no noise)")
    p.add_argument("--sim-ideal-itl-ms", type=float, default=None,
                   help="ideal-timing mode: fixed inter-token interval")
    p.add_argument("--sim-ideal-procs", type=int, default=1, metavar="N",
                   help="ideal-timing mode only: serve the port from N processes (SO_REUSEPORT, "
                   "each its own IdealEngine; a measurement aid, not an SGLang behaviour: "
                   "console/sim/procs.py). /_sim/lateness merges all of them; /metrics, "
                   "/server_info and the GPU state file (the parent's) are per process")
    p.add_argument("--sim-num-gpus", type=int, default=8)
    p.add_argument("--sim-gpu-name", default="NVIDIA RTX PRO 6000 Blackwell Server Edition")
    p.add_argument("--sim-gpu-memory-mib", type=int, default=97887)
    p.add_argument("--sim-startup-seconds", type=float, default=6.0,
                   help="total simulated startup duration (0 = ready at once)")
    p.add_argument("--sim-state-file", default=None,
                   help=f"GPU state file for the telemetry agent (default {default_state_file()})")
    p.add_argument("--sim-weights-gb", type=float, default=40.0,
                   help="total model weight size in GB (split over --tp-size)")
    p.add_argument("--sim-speed", type=float, default=1.0,
                   help="time scale: the model runs this many times faster than real time")
    p.add_argument("--sim-nan-when", default=None, metavar="FLAG=VALUE[,FLAG=VALUE...]",
                   help="crash with a NaN error when all these flags have these values, "
                   "e.g. 'attention-backend=triton,kv-cache-dtype=fp8_e4m3'")
    p.add_argument("--sim-nan-after-steps", type=int, default=20,
                   help="decode steps before the NaN crash")
    p.add_argument("--sim-kv-bytes-per-token", type=int, default=98304,
                   help="KV cache bytes per token per GPU at TP1 (bf16)")
    p.add_argument("--sim-layers", type=int, default=61,
                   help="transformer layers (two tensor-parallel all-reduces each per step)")
    p.add_argument("--sim-arch", default="LlamaForCausalLM",
                   help="the model's architecture, as the weight-loading line names it "
                   "(what decides, e.g., whether attention DP is supported)")
    p.add_argument("--sim-nvlink", action="store_true",
                   help="GPUs joined by NVLink (default: PCIe only, like RTX PRO 6000 hosts)")
    p.add_argument("--sim-power-limit-w", type=float, default=600.0,
                   help="board power limit per GPU (what `nvidia-smi -pl` sets)")
    p.add_argument("--sim-ambient-c", type=float, default=28.0,
                   help="air temperature at the GPUs' intake (the host's cooling)")
    p.add_argument("--sim-warmup", action="store_true",
                   help="a fresh server warms up: runtime JIT stalls and slow first steps "
                   "(console/sim/warmup.py)")
    p.add_argument("--sim-boot-spread", type=float, default=None, metavar="FRACTION",
                   help="each boot draws its kernel speed uniformly within +-FRACTION "
                   "(e.g. 0.04); default: the usual ~1%% launch-to-launch noise")
    return p


_SIM_FLAGS_WITHOUT_VALUE = {"--sim-help", "--sim-nvlink", "--sim-warmup"}


def split_sim_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """Separate `--sim-*` options (with their values) from SGLang's argv."""
    sim: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg.startswith("--sim-"):
            sim.append(arg)
            if "=" not in arg and arg not in _SIM_FLAGS_WITHOUT_VALUE and index + 1 < len(argv):
                sim.append(argv[index + 1])
                index += 1
        else:
            rest.append(arg)
        index += 1
    return sim, rest


@dataclass(frozen=True)
class SimOptions:
    seed: int | None = None
    sglang_version: str = DEFAULT_VERSION
    ideal_ttft_ms: float | None = None
    ideal_itl_ms: float | None = None
    ideal_procs: int = 1
    num_gpus: int = 8
    gpu_name: str = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    gpu_memory_mib: int = 97887
    startup_seconds: float = 6.0
    state_file: str = field(default_factory=default_state_file)
    weights_gb: float = 40.0
    speed: float = 1.0
    nan_when: dict[str, str] | None = None
    nan_after_steps: int = 20
    kv_bytes_per_token: int = 98304
    layers: int = 61
    arch: str = "LlamaForCausalLM"
    nvlink: bool = False
    power_limit_w: float = 600.0
    ambient_c: float = 28.0
    warmup: bool = False
    boot_spread: float | None = None

    @property
    def ideal(self) -> bool:
        return self.ideal_ttft_ms is not None or self.ideal_itl_ms is not None


def _parse_nan_when(spec: str | None) -> dict[str, str] | None:
    if not spec:
        return None
    out: dict[str, str] = {}
    for part in spec.split(","):
        key, _, value = part.partition("=")
        out[key.strip().lstrip("-").replace("-", "_")] = value.strip()
    return out


def merge_config_file(argv: list[str]) -> list[str]:
    """`--config FILE.yaml`: the file's options go before the command line's, as SGLang's
    ConfigArgumentMerger.merge_config_with_args does (srt/server_args.py:683-689,
    srt/utils/server_args_config_parser.py). Plateau uses it to keep --api-key off argv.
    The simulator reads the YAML subset `name: value` with JSON (or plain) scalar values."""
    if "--config" not in argv:
        return argv
    index = argv.index("--config")
    if index == len(argv) - 1:
        raise SystemExit("No config file specified after --config flag!")
    path = Path(argv[index + 1])
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise SystemExit(f"Config file must be YAML format, got: {path.suffix}")
    merged: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key, sep, raw = line.partition(":")
        if not sep or not key.strip() or key.lstrip().startswith("#"):
            continue
        try:
            value = json.loads(raw.strip())
        except ValueError:
            value = raw.strip()
        flag = "--" + key.strip().replace("_", "-")
        if value is True:
            merged.append(flag)
        elif value is not False and value is not None:
            merged += [flag, str(value)]
    return merged + argv[:index] + argv[index + 2:]


def _check_ideal_procs(sim_ns: argparse.Namespace) -> None:
    procs = sim_ns.sim_ideal_procs
    if procs < 1:
        raise SystemExit(f"plateau-sim: --sim-ideal-procs must be at least 1, got {procs}")
    if procs > 1 and sim_ns.sim_ideal_ttft_ms is None and sim_ns.sim_ideal_itl_ms is None:
        raise SystemExit("plateau-sim: --sim-ideal-procs needs ideal-timing mode "
                         "(--sim-ideal-ttft-ms / --sim-ideal-itl-ms)")


def _boot_spread(value: float | None) -> float | None:
    if value is not None and not 0 <= value < 0.5:
        raise SystemExit(f"plateau-sim: --sim-boot-spread must be in [0, 0.5), got {value}")
    return value


def parse(argv: list[str]) -> tuple[argparse.Namespace, SimOptions, list[str]]:
    """Parse a full command line. Exits 2 with argparse's message on errors, like SGLang."""
    sim_argv, sglang_argv = split_sim_argv(argv)
    sglang_argv = merge_config_file(sglang_argv)
    sim_parser = build_sim_parser()
    sim_ns = sim_parser.parse_args(sim_argv)
    if sim_ns.sim_help:
        sim_parser.print_help()
        raise SystemExit(0)
    _check_ideal_procs(sim_ns)
    args = build_sglang_parser(sim_ns.sim_sglang_version).parse_args(sglang_argv)
    if not 0 <= args.port <= 65535:  # bind() would raise OverflowError with a traceback
        raise SystemExit(f"plateau-sim: --port {args.port} is not a TCP port (0-65535)")
    sim = SimOptions(
        seed=sim_ns.sim_seed,
        sglang_version=sim_ns.sim_sglang_version,
        ideal_ttft_ms=sim_ns.sim_ideal_ttft_ms,
        ideal_itl_ms=sim_ns.sim_ideal_itl_ms,
        ideal_procs=sim_ns.sim_ideal_procs,
        num_gpus=sim_ns.sim_num_gpus,
        gpu_name=sim_ns.sim_gpu_name,
        gpu_memory_mib=sim_ns.sim_gpu_memory_mib,
        startup_seconds=max(0.0, sim_ns.sim_startup_seconds),
        state_file=sim_ns.sim_state_file or default_state_file(),
        weights_gb=sim_ns.sim_weights_gb,
        speed=max(1e-3, sim_ns.sim_speed),
        nan_when=_parse_nan_when(sim_ns.sim_nan_when),
        nan_after_steps=sim_ns.sim_nan_after_steps,
        kv_bytes_per_token=sim_ns.sim_kv_bytes_per_token,
        layers=max(1, sim_ns.sim_layers),
        arch=str(sim_ns.sim_arch),
        nvlink=bool(sim_ns.sim_nvlink),
        power_limit_w=max(50.0, sim_ns.sim_power_limit_w),
        ambient_c=sim_ns.sim_ambient_c,
        warmup=bool(sim_ns.sim_warmup),
        boot_spread=_boot_spread(sim_ns.sim_boot_spread),
    )
    return args, sim, sglang_argv
