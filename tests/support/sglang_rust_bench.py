"""Run SGLang 0.5.23's Rust benchmark client without SGLang's package import (or torch).

`python tests/support/sglang_rust_bench.py --backend sglang --dataset-name random-ids ...`
behaves like `python -m sglang.benchmark.rust_client ...` (same flags as
`sglang.benchmark.serving` for what Plateau passes: console/bench/bench_serving.py's
`bench_argv`; the same result block and JSONL record).

`python -m sglang.benchmark.rust_client` itself cannot start here: `import sglang` runs
sglang/__init__.py, which imports the server's dependencies (psutil first, then torch and the
rest), none of which `pip install --no-deps sglang==0.5.23` brings. The client is a compiled
PyO3 extension, `sglang/srt/rust_extensions/_bench.*.so`, that links only libc, libm and
libgcc_s; its module `sglang/benchmark/rust_client.py` imports only the stdlib and accepts the
extension as an argument. So: load the extension file directly, and hand it to that `main`.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types
from pathlib import Path
from typing import Any

SHIM_PATH = Path(__file__).resolve()
EXTENSION = "sglang.srt.rust_extensions._bench"


def _sglang_dir() -> str:
    spec = importlib.util.find_spec("sglang")
    if spec is None or spec.origin is None:
        raise SystemExit("sglang is not installed (pip install --no-deps sglang==0.5.23)")
    return os.path.dirname(spec.origin)  # locates the package without executing it


def load_extension() -> Any:
    folder = Path(_sglang_dir()) / "srt" / "rust_extensions"
    found = sorted(folder.glob("_bench.*.so"))
    if not found:
        raise SystemExit(f"no Rust bench extension (_bench.*.so) in {folder}")
    loader = importlib.machinery.ExtensionFileLoader(EXTENSION, str(found[0]))
    spec = importlib.util.spec_from_file_location(EXTENSION, found[0], loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _rust_client_module() -> Any:
    """sglang/benchmark/rust_client.py, without running sglang/__init__.py."""
    sg = _sglang_dir()
    for name, path in (("sglang", sg), ("sglang.benchmark", os.path.join(sg, "benchmark"))):
        package = types.ModuleType(name)
        package.__path__ = [path]
        sys.modules.setdefault(name, package)
    import importlib

    return importlib.import_module("sglang.benchmark.rust_client")


def main() -> None:
    extension = load_extension()
    argv = ["sglang-bench", *sys.argv[1:]]
    raise SystemExit(_rust_client_module().main(argv, extension=extension))


if __name__ == "__main__":
    main()
