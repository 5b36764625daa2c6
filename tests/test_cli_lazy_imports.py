"""A command imports what it uses, not every command's machinery (issue 19 items 5 and 6).

`plateau logscan` is a file scan: Textual, asyncssh, httpx and the load generator are no part
of it. Checked in a fresh interpreter (this one has imported everything already).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from console.cli import build_parser
from tests.support.logs_fixtures import SAMPLE_LOG

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import contextlib, io, json, sys
from console.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_after(*argv: str) -> tuple[int, set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return result["code"], {name.split(".")[0] for name in result["modules"]} | set(
        result["modules"])


def test_logscan_imports_no_tui_ssh_http_or_load_generator() -> None:
    code, modules = _modules_after("logscan", str(SAMPLE_LOG))
    assert code == 0
    assert "console.logs.scan" in modules  # the probe saw the command run
    for heavy in ("textual", "asyncssh", "httpx", "aiohttp", "console.bench", "console.jobs",
                  "console.app", "console.commands.sweep"):
        assert heavy not in modules, heavy


def test_help_still_lists_every_command() -> None:
    parser = build_parser()
    text = parser.format_help()
    for name in ("demo", "logscan", "sweep", "ab", "server", "config", "replay"):
        assert name in text
    code, modules = _modules_after("--help")
    assert code == 0 and "console.commands.ab" in modules


DEMO_PROBE = """
import json, sys
import console.cli, console.commands.demo
from console.app.launch import Launch, run_console
from console.demo import demo_profile, temp_demo
from console.server.guard import owner_guard
print(json.dumps(sorted(sys.modules)))
"""


def test_demo_first_frame_imports_no_load_generator_ssh_or_http() -> None:
    """What `plateau demo` imports before its first frame: the app, not the sweep and A/B
    machinery (load engines, aiohttp workers), SSH, HTTP or Prometheus (issue 19 item 5);
    those come when a sweep, an SSH host or the server's HTTP first needs them."""
    done = subprocess.run([sys.executable, "-c", DEMO_PROBE], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    modules = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "console.app.app" in modules and "textual" in modules  # the probe imported the app
    for heavy in ("aiohttp", "asyncssh", "httpx", "prometheus_client", "console.bench.engines",
                  "console.jobs.sweep", "console.jobs.ab", "console.host.ssh"):
        assert heavy not in modules, heavy
