"""`plateau gpus [HOST | --demo | --local] [--once] [--json]`: per-GPU telemetry, headless."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from console.commands import argtypes
from console.errors import UsageError
from console.gpu.collector import AgentOptions, Backend, GpuCollector
from console.gpu.format import header_line, table
from console.gpu.models import GpuHeader, GpuSample
from console.host.transport import Transport

# `--once`: two samples this far apart, the second printed. Rates (PCIe, NVLink, GPM) are
# differences between two samples, so a single sample would show them as N/A.
ONCE_GAP_S = 0.5


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "gpus",
        help="print per-GPU telemetry of a host (table or JSON lines)",
        description="Run the GPU telemetry agent on HOST (over its connection) and print "
        "each sample. --demo: this machine with simulated GPUs; --local: this machine's real "
        "GPUs.",
    )
    parser.add_argument("host", nargs="?", help="host name from the config")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--demo", action="store_true", help="simulated GPUs on this machine")
    where.add_argument("--local", action="store_true", help="this machine's GPUs")
    parser.add_argument("--once", action="store_true",
                        help=f"print one sample and exit (two are taken {ONCE_GAP_S:g} s apart, "
                        "so PCIe/NVLink rates are there)")
    parser.add_argument("--count", type=argtypes.count, default=0, metavar="N",
                        help="stop after N samples (default 0: until interrupted)")
    parser.add_argument("--json", action="store_true", help="JSON lines (header, then samples)")
    parser.add_argument("--interval", type=argtypes.float_at_least(0.25), default=1.0, metavar="S",
                        help="seconds between samples (min 0.25; default 1)")
    parser.add_argument("--backend", choices=("auto", "nvml", "smi", "sim"), default=None,
                        help="agent backend (default: sim for --demo and simulated hosts, "
                        "else auto: NVML, then nvidia-smi)")
    parser.add_argument("--no-pcie", action="store_true",
                        help="skip PCIe throughput (its NVML call blocks ~20 ms per GPU)")
    parser.add_argument("--sim-gpus", type=argtypes.int_at_least(1, 64), default=None, metavar="N")
    parser.add_argument("--sim-state", default=None, metavar="FILE",
                        help="simulator GPU state file (sim backend)")
    parser.set_defaults(handler=run)


def _resolve(args: argparse.Namespace) -> tuple[Transport, AgentOptions]:
    from console.host.local import LocalTransport

    count = 2 if args.once else max(0, args.count)
    common: dict[str, Any] = {
        "interval": ONCE_GAP_S if args.once else args.interval,
        "count": count,
        "pcie": "off" if args.no_pcie else "auto",
        "sim_gpus": args.sim_gpus,
        "sim_state": args.sim_state,
    }
    if args.demo or args.local:
        if args.host:
            raise UsageError("give a HOST or --demo/--local, not both")
        backend: Backend = args.backend or ("sim" if args.demo else "auto")
        return LocalTransport("demo" if args.demo else "local"), AgentOptions(
            backend=backend, python=sys.executable, **common
        )
    from console.config import load_config
    from console.host.factory import transport_for

    loaded = load_config(getattr(args, "config", None))
    if not loaded.config.hosts:
        where = loaded.path or "no config file found"
        raise UsageError(
            f"no hosts configured ({where}): add a [[hosts]] entry, or use --demo "
            "(simulated GPUs) or --local (this machine's GPUs)"
        )
    try:
        host = loaded.config.host(args.host)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    simulated = bool(host.sim_state_file)
    if simulated and not common["sim_state"]:
        common["sim_state"] = host.sim_state_file
    backend = args.backend or ("sim" if simulated else "auto")
    python = sys.executable if host.local and host.python == "python3" else host.python
    return transport_for(host), AgentOptions(backend=backend, python=python, **common)


async def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    transport, options = _resolve(args)
    await transport.connect()
    try:
        async with GpuCollector(transport, options) as collector:
            seen = 0
            async for event in collector:
                if isinstance(event, GpuSample):
                    seen += 1
                    if args.once and seen < options.count:
                        continue  # the first of two: only there to make rates
                _print(event, transport.host_name, args.json, out, collector.header)
    finally:
        await transport.close()
    return 0


def _print(
    event: GpuHeader | GpuSample,
    host: str,
    as_json: bool,
    out: TextIO,
    header: GpuHeader | None = None,
) -> None:
    if as_json:
        kind = "header" if isinstance(event, GpuHeader) else "sample"
        out.write(f'{{"type":"{kind}","host":{_json_str(host)},'
                  f'"data":{event.model_dump_json()}}}\n')
    elif isinstance(event, GpuHeader):
        out.write(header_line(host, event) + "\n")
    else:
        nvlink = bool(header.nvlink) if header is not None else None
        out.write("\n" + table(event, nvlink=nvlink) + "\n")
    out.flush()


def _json_str(text: str) -> str:
    import json

    return json.dumps(text)
