"""Start-up of `plateau demo`: keypress to the first frame with the layout in place, in a real
terminal (tmux), against a bare Textual app measured the same way in the same run.

In the terminal (the figure an operator feels, issue 19 item 5): a private tmux server runs a
clean bash at 160x48 in the repository; the command line is typed, and t0 is taken as Enter is
sent. The pane is then read (`tmux capture-pane`) every few ms until the frame holds the
layout: for the demo, the header (`host demo`), every dashboard panel's title (GPUs, Server,
Log, Sweep) and the footer's keys; for the peer, a bare `App` with one Static, its own text.
Data may still be filling in: the later milestones (the GPU table's first sample, the server
ready; for the demo they include its boot, which runs once the first frame is drawn:
console/app/boot.py) are printed as well, and the CPU time the app's process had used when its frame
appeared (/proc; on a loaded machine this moves less than wall time). Then `q` quits and the
next run starts; runs of the two apps are interleaved after one warm-up run of each (not
counted: it writes the bytecode of this checkout, as pip does at install), and the median of
--runs is reported. XDG dirs point at a temp dir: a new user, no config, no history.

Headless (--headless; the figure this benchmark used to print): interpreter start to the
moment the app's auto-pilot gets control (composed, mounted, one refresh), no terminal I/O, no
`plateau` CLI start-up; the same two apps. It reads lower than the terminal figure because a
terminal frame also needs the CLI, the driver, and the write to the pane.

CPU (--cpu): the CPU time (user + system) from the interpreter's start to the first
compositor refresh whose screen shows the layout (the header, the four panels, the footer's
Quit key), headless, `plateau demo` through its CLI (the baseline's too), against the bare
app's first refresh. Less load-sensitive than the terminal figure, and read at the frame itself
(the terminal figure's "app CPU by then" is read once the pane shows the frame, so it also
counts what the app did meanwhile).

Instructions (--instructions; needs valgrind): the same two scripts as --cpu under valgrind's
cachegrind, which counts the instructions executed from the interpreter's start to the first
frame (the process ends there). Unmoved by load, so two revisions compare on a busy box; the
least of 3 runs (a run's count varies by a few % with how the event loop's wake-ups fall).

    .venv/bin/python tests/bench/bench_app_startup.py [--runs 3] [--headless] [--cpu]
        [--cpu-runs N] [--no-terminal]  (the CPU figure alone, e.g. on a loaded box where
        the terminal's wall times spread too far to compare)
        [--compare-baseline REV|DIR]  (also `plateau demo` as of git REV, interleaved)
        [--instructions]  (the instruction counts alone)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLATEAU = Path(sys.executable).with_name("plateau")

BARE_APP = r"""
from textual.app import App
from textual.widgets import Static
class Bare(App):
    BINDINGS = [("q", "quit", "Quit")]
    def compose(self):
        yield Static("bare textual app: first frame")
Bare().run()
"""
DEMO_LAYOUT: tuple[str, ...] = (
    "host demo", "━ GPUs ━", "─ Server ─", "─ Log ─", "─ Sweep ─", "q Quit")
BARE_LAYOUT = ("bare textual app: first frame",)
DEMO_LATER: dict[str, tuple[str, ...]] = {"GPU data": ("kW",), "server ready": ("READY",)}
PROMPT = "plateau-bench$ "


class Pane:
    """One private tmux server with one pane running a clean bash."""

    def __init__(self, home: Path, size: tuple[int, int]) -> None:
        self.socket = f"plateau-bench-{os.getpid()}"
        env = {"XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
               "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache"),
               "TEXTUAL_ANIMATIONS": "none",
               # An installed plateau has its bytecode compiled (pip does it); this checkout's
               # is written by the warm-up run, never recompiled per run.
               "PYTHONDONTWRITEBYTECODE": ""}
        args = ["new-session", "-d", "-s", "bench", "-x", str(size[0]), "-y", str(size[1]),
                "-c", str(ROOT)]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        self.tmux(*args, "bash --norc --noprofile")
        self.tmux("send-keys", "-t", "bench", "-l", f"PS1='{PROMPT}'")
        self.tmux("send-keys", "-t", "bench", "Enter")
        self.wait_for((PROMPT.strip(),), timeout=10)

    def tmux(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args],
                              capture_output=True, text=True, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "bench")

    def wait_for(self, markers: tuple[str, ...], *, timeout: float,
                 poll: float = 0.005) -> float:
        """Seconds (perf_counter) when every marker is on the screen."""
        deadline = time.perf_counter() + timeout
        while True:
            text = self.screen()
            now = time.perf_counter()
            if all(marker in text for marker in markers):
                return now
            if now > deadline:
                raise SystemExit(f"timed out waiting for {markers!r}; screen:\n{text}")
            time.sleep(poll)

    def prompt_back(self, timeout: float) -> None:
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            lines = [line for line in self.screen().splitlines() if line.strip()]
            if lines and lines[-1].rstrip() == PROMPT.strip():
                return
            time.sleep(0.1)
        raise SystemExit(f"the shell prompt did not come back within {timeout:.0f} s")

    def app_cpu(self) -> float:
        """CPU seconds (user + system) the pane's foreground command has used so far: the
        shell's child (the app; not the processes it starts, e.g. the simulated server)."""
        shell = int(self.tmux("display-message", "-p", "-t", "bench", "#{pane_pid}").strip())
        children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        total = 0.0
        for pid in children:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       check=False)


def terminal_run(pane: Pane, command: str, layout: tuple[str, ...],
                 later: dict[str, tuple[str, ...]]) -> dict[str, float]:
    pane.tmux("send-keys", "-t", "bench", "clear", "Enter")
    pane.prompt_back(10)
    pane.tmux("send-keys", "-t", "bench", "-l", command)
    pane.wait_for((command[-30:],), timeout=10)
    t0 = time.perf_counter()
    pane.tmux("send-keys", "-t", "bench", "Enter")
    marks = {"first frame": pane.wait_for(layout, timeout=60) - t0}
    marks["cpu to first frame"] = pane.app_cpu()
    for name, markers in later.items():
        marks[name] = pane.wait_for(markers, timeout=120, poll=0.02) - t0
    pane.tmux("send-keys", "-t", "bench", "q")
    pane.prompt_back(90)  # the demo stops its simulated server on the way out
    return marks


# -- headless (the previous figure) ------------------------------------------------------------

HEADLESS_DEMO = r"""
import time; t0 = time.perf_counter()
import asyncio, json, os
os.environ["TEXTUAL_ANIMATIONS"] = "none"
from console.app.launch import Launch, _make_app, build_sessions, _shutdown
from console.config import LoadedConfig
from console.demo import demo_profile, temp_demo
marks = {}
async def main():
    config, run_dir = temp_demo(1, startup_seconds=2.0)
    loaded = LoadedConfig(config, None)
    launch = Launch(loaded, launch_profile=demo_profile(loaded.config), stop_on_exit=True,
                    store_path=run_dir / "h.sqlite")
    sessions, active = build_sessions(launch)
    app = _make_app(launch, sessions, active)
    async def pilot(p):
        marks["first frame"] = time.perf_counter() - t0
        app.exit()
    try:
        await app.run_async(headless=True, size=(160, 48), auto_pilot=pilot)
    finally:
        await _shutdown(sessions, active, True)
asyncio.run(main())
print(json.dumps(marks))
"""

HEADLESS_BARE = r"""
import time; t0 = time.perf_counter()
import asyncio, json
from textual.app import App
from textual.widgets import Static
class Bare(App):
    def compose(self):
        yield Static("hello")
marks = {}
async def pilot(p):
    marks["first frame"] = time.perf_counter() - t0
    p.app.exit()
asyncio.run(Bare().run_async(headless=True, size=(160, 48), auto_pilot=pilot))
print(json.dumps(marks))
"""


CPU_DEMO = r"""
import json, os, sys, time
os.environ["TEXTUAL_ANIMATIONS"] = "none"
import textual.app
from textual.screen import Screen
run_async = textual.app.App.run_async
async def headless(self, **kw):
    return await run_async(self, headless=True, size=(160, 48), **kw)
textual.app.App.run_async = headless
marks = {}
refresh = Screen._compositor_refresh
def layout_shown(screen):  # the header, the four panels, the footer's Quit key
    shown = screen._compositor.visible_widgets
    kinds = [type(w).__name__ for w in shown]
    # the footer's Quit: a FooterKey widget, or (issue 42 on) drawn by the one footer widget
    quit_key = any((kind == "FooterKey" and getattr(w, "description", "") == "Quit") or
                   (kind == "PlateauFooter" and
                    any(k.description == "Quit" for k in getattr(w, "shown_keys", ())))
                   for kind, w in zip(kinds, shown))
    return quit_key and kinds.count("Panel") >= 4 and "PlateauHeader" in kinds
def watched(self):
    refresh(self)
    if "cpu" not in marks and layout_shown(self):
        marks["cpu"] = time.process_time()
        self.app.exit()
Screen._compositor_refresh = watched
from console.cli import main
main(["demo", "--seed", "1"])
print(json.dumps(marks))
"""

CPU_BARE = r"""
import json, os, time
os.environ["TEXTUAL_ANIMATIONS"] = "none"
from textual.app import App
from textual.widgets import Static
marks = {}
class Bare(App):
    def compose(self):
        yield Static("bare textual app: first frame")
    def on_mount(self):
        self.call_after_refresh(self.done)
    def done(self):
        marks["cpu"] = time.process_time()
        self.exit()
Bare().run(headless=True, size=(160, 48))
print(json.dumps(marks))
"""


def cpu_run(code: str, cwd: Path, home: Path) -> float:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("PLATEAU_DB", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                         timeout=120, check=True, env=env)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["cpu"])


def instructions_run(code: str, cwd: Path, home: Path) -> int:
    """Instructions to the first frame: the CPU script, ending the process at its frame."""
    code = code.replace("self.app.exit()", "os._exit(0)").replace("self.exit()", "os._exit(0)")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "", "PYTHONHASHSEED": "0",
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_DATA_HOME": str(home / "data"),
           "XDG_STATE_HOME": str(home / "state"), "XDG_CACHE_HOME": str(home / "cache")}
    env.pop("PLATEAU_DB", None)
    done = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                           "--cachegrind-out-file=/dev/null", sys.executable, "-c", code],
                          cwd=cwd, capture_output=True, text=True, timeout=600, check=True,
                          env=env)
    refs = [line for line in done.stderr.splitlines() if "I   refs:" in line or
            "I refs:" in line]
    if not refs:
        raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(refs[-1].split(":")[1].replace(",", "").strip())


def instructions_only(args: argparse.Namespace) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install -y valgrind)")
    with tempfile.TemporaryDirectory() as home_name:
        home = Path(home_name)
        apps = {"plateau demo": (CPU_DEMO, ROOT)}
        if args.compare_baseline:
            apps[f"demo@{args.compare_baseline}"] = (
                CPU_DEMO, extract(args.compare_baseline, home))
        apps["bare Textual app"] = (CPU_BARE, ROOT)
        for code, cwd in apps.values():  # bytecode written, as by an install
            cpu_run(code, cwd, home)
        counts = {name: min(instructions_run(code, cwd, home) for _ in range(3))
                  for name, (code, cwd) in apps.items()}
    bare = counts["bare Textual app"]
    print("instructions (cachegrind), interpreter start to the first frame with the layout; "
          "least of 3")
    for name, count in counts.items():
        print(f"  {name:<24} {count / 1e9:6.3f} G  x{count / bare:.2f} peer")


def headless_run(code: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(row[key] for row in rows)


def _spread(rows: list[dict[str, float]], key: str) -> str:
    values = sorted(row[key] for row in rows)
    return f"({values[0] * 1000:.0f}-{values[-1] * 1000:.0f})"


def extract(rev: str, into: Path) -> Path:
    """console/, widgets/ and themes/ as of git `rev`, importable from the returned dir; `rev`
    may also be a directory holding them already (a machine given the working tree without
    its .git: `git archive REV console widgets themes | tar -x -C DIR` made it elsewhere)."""
    if (Path(rev) / "console").is_dir():
        return Path(rev).resolve()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "console",
                              "widgets", "themes"], capture_output=True, check=True).stdout
    tree = into / "baseline"
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def cpu_figures(args: argparse.Namespace, home: Path,
                tree: Path | None) -> dict[str, list[float]]:
    """--cpu: each app's CPU to its first frame (see the module doc), interleaved, after one
    warm-up run of each."""
    if not args.cpu:
        return {}
    apps = {"plateau demo": (CPU_DEMO, ROOT)}
    if tree is not None:
        apps[f"demo@{args.compare_baseline}"] = (CPU_DEMO, tree)
    apps["bare Textual app"] = (CPU_BARE, ROOT)
    rows: dict[str, list[float]] = {name: [] for name in apps}
    for code, cwd in apps.values():
        cpu_run(code, cwd, home)
    for _ in range(args.cpu_runs or args.runs):
        for name, (code, cwd) in apps.items():
            rows[name].append(cpu_run(code, cwd, home))
    return rows


def print_cpu(cpu_rows: dict[str, list[float]]) -> None:
    bare = statistics.median(cpu_rows["bare Textual app"])
    runs = len(cpu_rows["bare Textual app"])
    print(f"CPU, headless: interpreter start to the first frame with the layout; median of "
          f"{runs}, interleaved; load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for name, values in cpu_rows.items():
        cpu = statistics.median(values)
        print(f"  {name:<24} {cpu * 1000:6.0f} ms ({min(values) * 1000:.0f}-"
              f"{max(values) * 1000:.0f})  x{cpu / bare:.2f} peer")


def cpu_only(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as home_name:
        home = Path(home_name)
        tree = extract(args.compare_baseline, home) if args.compare_baseline else None
        print_cpu(cpu_figures(args, home, tree))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--headless", action="store_true",
                        help="also the headless figure (interpreter start to auto-pilot)")
    parser.add_argument("--cpu", action="store_true",
                        help="also the CPU to the first frame with the layout (headless)")
    parser.add_argument("--cpu-runs", type=int, default=0,
                        help="runs of the CPU figure (default: --runs)")
    parser.add_argument("--no-terminal", action="store_true",
                        help="the CPU figure only (implies --cpu)")
    parser.add_argument("--compare-baseline", metavar="REV",
                        help="also `plateau demo` as of git REV, interleaved in the same run")
    parser.add_argument("--instructions", action="store_true",
                        help="the instructions to the first frame alone (valgrind)")
    args = parser.parse_args()
    if args.instructions:
        instructions_only(args)
        return
    args.cpu = args.cpu or args.no_terminal
    if args.no_terminal:
        cpu_only(args)
        return
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed (apt-get install -y tmux)")
    rows: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as home_name:
        home = Path(home_name)
        bare_app = home / "bare_app.py"
        bare_app.write_text(BARE_APP)
        apps: dict[str, tuple[str, tuple[str, ...], dict[str, tuple[str, ...]]]] = {
            "plateau demo": (f"{PLATEAU} demo --seed 1", DEMO_LAYOUT, DEMO_LATER)}
        if args.compare_baseline:
            tree = extract(args.compare_baseline, home)
            apps[f"demo@{args.compare_baseline}"] = (
                # In the tree: `-m` puts the current directory first on sys.path.
                f"(cd {tree} && {sys.executable} -m console.cli demo --seed 1)",
                DEMO_LAYOUT, DEMO_LATER)
        apps["bare Textual app"] = (f"{sys.executable} {bare_app}", BARE_LAYOUT, {})
        pane = Pane(home, (160, 48))
        try:
            for command, layout, _ in apps.values():  # warm-up: bytecode, disk cache
                terminal_run(pane, command, layout, {})
            for _ in range(args.runs):
                for name, (command, layout, later) in apps.items():
                    rows.setdefault(name, []).append(terminal_run(pane, command, layout, later))
        finally:
            pane.close()
        cpu_rows = cpu_figures(args, home, tree if args.compare_baseline else None)
    peer = _median(rows["bare Textual app"], "first frame")
    peer_cpu = _median(rows["bare Textual app"], "cpu to first frame")
    print(f"terminal: tmux 160x48, keypress (Enter) to the first frame with the layout; median "
          f"of {args.runs} (min-max), interleaved; load {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs")
    for name, runs in rows.items():
        first, cpu = _median(runs, "first frame"), _median(runs, "cpu to first frame")
        print(f"  {name:<24} first frame {first * 1000:6.0f} ms {_spread(runs, 'first frame'):<13}"
              f" x{first / peer:.2f} peer;  app CPU by then {cpu * 1000:5.0f} ms "
              f"x{cpu / peer_cpu:.2f} peer")
        for moment in DEMO_LATER if name != "bare Textual app" else ():
            print(f"  {'':<24} {moment:<11} {_median(runs, moment) * 1000:6.0f} ms "
                  f"{_spread(runs, moment)}")
    if cpu_rows:
        print_cpu(cpu_rows)
    if args.headless:
        pairs = [(headless_run(HEADLESS_DEMO), headless_run(HEADLESS_BARE))
                 for _ in range(args.runs)]
        hd = _median([r[0] for r in pairs], "first frame")
        hb = _median([r[1] for r in pairs], "first frame")
        print("headless: interpreter start to the app's auto-pilot (no terminal, no CLI)")
        print(f"  demo app {hd * 1000:6.0f} ms, bare app {hb * 1000:6.0f} ms, x{hd / hb:.2f}")


if __name__ == "__main__":
    main()
