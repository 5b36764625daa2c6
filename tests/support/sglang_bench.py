"""Run SGLang 0.5.23's own `sglang.benchmark.serving` without torch (reference Appendix C).

`python tests/support/sglang_bench.py --backend sglang --dataset-name random-ids
 --tokenizer DIR --port P ...` behaves like `python -m sglang.benchmark.serving ...`.
It pre-registers bare package objects for `sglang`, `sglang.srt`, `sglang.srt.utils` and
`sglang.srt.disaggregation` (so their heavy `__init__` never runs), replaces the two leaf modules
serving.py imports with stand-ins, and stubs `datasets` if absent. Needs the packages in
tests/requirements-bench.txt and the sglang wheel installed (--no-deps) or on PYTHONPATH.
Other code uses `SHIM_PATH` to launch it. Depends on 0.5.23 internals: re-check on upgrade with
`grep -n "^from sglang" sglang/benchmark/serving.py`.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
from pathlib import Path

SHIM_PATH = Path(__file__).resolve()


def install_stubs() -> None:
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        raise SystemExit("sglang is not installed (pip install --no-deps sglang==0.5.23)")
    sg = os.path.dirname(spec.origin)  # locates the package without executing it

    def bare(name: str, path: str) -> None:
        module = types.ModuleType(name)
        module.__path__ = [path]
        sys.modules[name] = module

    bare("sglang", sg)
    bare("sglang.srt", os.path.join(sg, "srt"))
    bare("sglang.srt.utils", os.path.join(sg, "srt", "utils"))
    bare("sglang.srt.disaggregation", os.path.join(sg, "srt", "disaggregation"))
    du = types.ModuleType("sglang.srt.disaggregation.utils")
    du.FAKE_BOOTSTRAP_HOST = "2.2.2.2"  # type: ignore[attr-defined]
    sys.modules[du.__name__] = du
    net = types.ModuleType("sglang.srt.utils.network")

    def _fmt(host: str) -> str:
        return f"[{host}]" if ":" in host and not host.startswith("[") else host

    net.resolve_base_url = lambda b, h, p: b or f"http://{_fmt(h)}:{p}"  # type: ignore[attr-defined]
    net.resolve_host_port = lambda b, h, p: b or f"{_fmt(h)}:{p}"  # type: ignore[attr-defined]
    sys.modules[net.__name__] = net
    try:
        import datasets  # noqa: F401  (only the mmmu dataset needs it)
    except ImportError:
        stub = types.ModuleType("datasets")
        stub.load_dataset = None  # type: ignore[attr-defined]
        sys.modules["datasets"] = stub


def main() -> None:
    install_stubs()
    from sglang.benchmark.serving import cli_main

    cli_main()


if __name__ == "__main__":
    main()
