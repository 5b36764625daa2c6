"""A command imports what it uses, not every command's machinery (issue 19 items 5 and 6).

`plateau logscan` is a file scan: Textual, asyncssh, httpx and the load generator are no part
of it. Checked in a fresh interpreter (this one has imported everything already).
"""

from __future__ import annotations

import json
import os
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
import textual.app
from console.app.app import PlateauApp
from console.cli import main

run_async = textual.app.App.run_async
async def headless(self, **kw):
    return await run_async(self, headless=True, size=(160, 48), **kw)
textual.app.App.run_async = headless
seen = []
built = []
def models(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from models(sub)
def first_frame(self):  # what the first frame with the layout needed (or the boot); then quit
    seen.extend(sorted(sys.modules))
    if "pydantic" in sys.modules:
        from pydantic import BaseModel
        built.extend(sorted(f"{m.__module__}.{m.__name__}" for m in models(BaseModel)
                            if m.__dict__.get("__pydantic_complete__")))
    self.exit()
# _start_sessions: once the first frame is drawn, before the boot; _start_pumps: once booted
setattr(PlateauApp, sys.argv[1], first_frame)
code = main(["demo", "--seed", "1"])
print(json.dumps({"code": code, "modules": seen, "built": built}))
"""

# Deferred until a screen, a key, a job or the session's work first needs them.
NOT_BEFORE_THE_FIRST_FRAME = (
    # the sweep and A/B machinery and the run models (console.bench, console.jobs), SSH,
    # HTTP, Prometheus
    "console.bench", "console.jobs", "aiohttp", "asyncssh", "httpx", "prometheus_client",
    "console.host.ssh",
    # the other screens and dialogs, and what fills them (stored runs, comparisons, diagnoses)
    "console.app.screens.views", "console.app.screens.modals", "console.app.views_data",
    "console.app.screens.gpu_processes", "widgets.flags_editor", "console.diagnose",
    "console.store.db",
    # the session's work: lifecycle, GPU agent, log follower, flag discovery
    "console.server.lifecycle", "console.gpu.collector", "console.logs.follower",
    "console.server.discovery",
    # recording, replay, snapshots
    "console.session.recording", "console.session.replay", "console.app.screenshot",
    # the stats aggregator and its batch, /metrics and DP readers (the first log line's), the
    # help panel (`?`), host sources and config error reporting (a config file's, an error's)
    "console.logs.server_stats", "console.logs.metrics", "console.sglang.dp",
    "widgets.help_panel", "console.hostsources.merge", "console.config_errors",
    # the Tune view's job
    "console.session.tune_control",
    # pydantic's plugin scan (importlib.metadata over every installed package), which the
    # first validator built pays for; a whole-log scan's launch models
    "pydantic.plugin._loader", "importlib.metadata", "console.logs.scan_launch",
    # the GPU models (pydantic classes): the first sample brings them (issue 42)
    "console.gpu.models",
    # the config's models and pydantic itself: the demo's boot makes its config once the
    # first frame is drawn (console.app.boot; a third of the frame's cost, issue 42), and
    # with it the sessions
    "pydantic", "pydantic_core", "console.config_models", "console.session.service",
)

# What the boot brings (the config, the sessions), still not the session's work.
NOT_BEFORE_THE_SESSIONS_START = tuple(
    name for name in NOT_BEFORE_THE_FIRST_FRAME
    if name not in ("pydantic", "pydantic_core", "console.config_models",
                    "console.session.service"))


def _demo_modules(tmp_path: Path, hook: str) -> tuple[set[str], list[str]]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "TMPDIR": str(tmp_path)}
    env.pop("PLATEAU_DB", None)
    done = subprocess.run([sys.executable, "-c", DEMO_PROBE, hook], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True, env=env)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    modules = {name.split(".")[0] for name in result["modules"]} | set(result["modules"])
    return modules, result["built"]


def test_demo_first_frame_imports_only_what_it_shows(tmp_path: Path) -> None:
    """What `plateau demo` has imported at its first frame (the real command, headless, up to
    the frame with the layout): the app and the dashboard, not the sweep and A/B machinery,
    SSH, HTTP, the other screens or the session's work (issue 19 item 5), nor the config's
    models (issue 42); those come when the boot, a screen, a job, an SSH host or the server's
    HTTP first needs them."""
    modules, built = _demo_modules(tmp_path, "_start_sessions")
    assert "console.app.screens.dashboard" in modules  # the probe saw the first frame
    for deferred in NOT_BEFORE_THE_FIRST_FRAME:
        assert deferred not in modules, deferred
    assert built == []
    assert not list(tmp_path.glob("plateau-demo-*"))  # nothing made: the boot had not run


def test_demo_boot_builds_no_validator_before_the_sessions_start(tmp_path: Path) -> None:
    """Once booted (the config, the sessions; the sessions not started yet): the session's
    work is still not imported, and no pydantic validator is built: the config models defer
    theirs to their first validation, and the demo's own config is built_in (not validated)."""
    modules, built = _demo_modules(tmp_path, "_start_pumps")
    assert "console.session.service" in modules and "pydantic" in modules  # booted
    for deferred in NOT_BEFORE_THE_SESSIONS_START:
        assert deferred not in modules, deferred
    assert built == []
    assert not list(tmp_path.glob("plateau-demo-*"))  # the guard removed the temp run dir
