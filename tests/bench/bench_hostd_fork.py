"""A host script run in a fork of plateau-hostd (console/host/hostd.py), with the script's
stdlib imports loaded once in the helper (`preimport`, what it does) vs without (each fork
imports them itself, as before): the child's CPU per run, for the status poll's scripts.

Each side runs in its own fresh interpreter (a helper that has imported nothing else), the
forks' CPU taken from wait4's rusage.

    .venv/bin/python tests/bench/bench_hostd_fork.py [N]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import importlib.util, json, os, sys, tempfile
spec = importlib.util.spec_from_file_location("hostd", sys.argv[1])
hostd = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hostd)
if sys.argv[2] == "without":
    hostd.preimport = lambda source: None
path = os.path.join(tempfile.mkdtemp(), "plateau-hostscript.py")
with open(path, "w") as out:
    out.write(sys.argv[3])
n = int(sys.argv[4])
result = {}
for name, args in (("read", {"path": "/nonexistent", "probe_record": True}),
                   ("probe", {"pid": 1, "identify": True, "launch_id": ""})):
    argv = [sys.executable, path, name, json.dumps(args)]
    total = 0.0
    for i in range(n + 5):
        null = os.open(os.devnull, os.O_RDWR)
        pid = hostd.fork_program(argv, null, null, null)
        os.close(null)
        _, _, usage = os.wait4(pid, 0)
        if i >= 5:  # the first runs compile and warm up
            total += usage.ru_utime + usage.ru_stime
    result[name] = 1000 * total / n
print(json.dumps(result))
"""


def run(mode: str, n: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    from console.server.hostscript import HOST_SCRIPT

    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "console/host/hostd.py"),
                          mode, HOST_SCRIPT, str(n)], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main(n: int) -> None:
    for _ in range(2):  # alternated: this machine is noisy
        with_, without = run("with", n), run("without", n)
        for name in with_:
            print(f"{name:<6} fork: preimported {with_[name]:5.2f} ms CPU, "
                  f"imported in each fork {without[name]:5.2f} ms CPU, "
                  f"ratio {with_[name] / without[name]:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
