"""Fuzzing every command's arguments and the config loader (hypothesis).

Three properties, for any input:
- parsing any command's arguments either works, or is argparse's usage error (exit 2): never
  another exception;
- the commands that are cheap to run in-process (config, history, compare, diagnose, logscan,
  and sweep against a closed loopback port) end with a documented exit code (0 ok, 1 failed,
  2 usage) and at most one `plateau: ...` line on stderr, never a traceback;
- nothing is written outside the paths given on the command line (HOME, the XDG dirs and the
  working directory are empty scratch dirs, checked after every example);
- the config loader answers any text with a config or one ConfigError line naming the file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.cli import build_parser, main
from console.config import parse_config_text
from console.errors import ConfigError

DOCUMENTED_EXIT_CODES = {0, 1, 2}
NASTY = [
    "", " ", "-", "--", "0", "-1", "1", "7", "nan", "-nan", "inf", "-inf", "1e309", "0x10",
    "1" * 40, "-" + "9" * 30, "\uff12", "1,2,,4", "1,-2", "a,b", "'", '"', "\\", "a\nb", "a\rb",
    "\x1b[31mred", "\x00", "\u202ertl", "http://[::1", "http://h:99999", "ftp://x",
    "http://127.0.0.1:1", "../../outside", "/etc/passwd", "/dev/zero", "%s%n", "{}", "[]",
]
PATH_OPTIONS = {"--db", "--output", "--out", "--run-dir", "--sim-state"}
# Commands run in-process end to end: no TUI, no server start, no network but loopback.
RUNNABLE = ("config", "history", "compare", "diagnose", "logscan", "sweep")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


SUBPARSERS = _subparsers()


def _value(action: argparse.Action, given_dir: Path) -> st.SearchStrategy[str]:
    if action.choices:
        return st.one_of(st.sampled_from([str(c) for c in action.choices]),
                         st.sampled_from(NASTY))
    option = action.option_strings[0] if action.option_strings else action.dest
    if option in PATH_OPTIONS or option in ("file",):
        names = st.one_of(st.sampled_from(["h.db", "out.md", "x.svg", "x.txt", "d/x.db", "."]),
                          st.text(alphabet="ab.-_ \n\x1b", min_size=1, max_size=8))
        paths = names.map(lambda name: str(given_dir / name))
        # /dev/null and stdin (- : /dev/null under pytest) end; /dev/zero never does, and
        # logscan streams any endless input in bounded memory by design (bad-input tests).
        special = ["/dev/null", *(["-"] if option == "file" else [])]
        return st.one_of(paths, st.sampled_from(special))
    return st.one_of(st.sampled_from(NASTY), st.text(max_size=12),
                     st.integers(-(2**70), 2**70).map(str),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr))


@st.composite
def _argv(draw: Any, name: str, given_dir: Path, exclude: frozenset[str] = frozenset()
          ) -> list[str]:
    parser = SUBPARSERS[name]
    argv = [name]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.dest in exclude or (
            set(action.option_strings) & exclude
        ):
            continue
        if isinstance(action, argparse._SubParsersAction):
            argv.append(draw(st.sampled_from([*action.choices, "nope"])))
            continue
        if not draw(st.booleans()):
            continue
        if not action.option_strings:  # a positional
            argv.append(draw(_value(action, given_dir)))
        elif action.nargs == 0:
            argv.append(action.option_strings[0])
        else:
            argv += [action.option_strings[0], draw(_value(action, given_dir))]
    return argv


@contextlib.contextmanager
def _scratch() -> Iterator[tuple[Path, Path, Path]]:
    """(given dir, HOME, cwd): HOME/XDG and the working directory point at empty dirs."""
    keys = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME",
            "PLATEAU_CONFIG", "PLATEAU_DB")
    saved = {key: os.environ.get(key) for key in keys}
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="plateau-fuzz-") as tmp:
        root = Path(tmp)
        given_dir, home, work = root / "given", root / "home", root / "work"
        for directory in (given_dir, home, work):
            directory.mkdir()
        os.environ["HOME"] = str(home)
        for key in keys[1:5]:
            os.environ[key] = str(home / key.lower())
        for key in keys[5:]:
            os.environ.pop(key, None)
        os.chdir(work)
        try:
            yield given_dir, home, work
        finally:
            os.chdir(cwd)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def _written(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, err.getvalue()


GIVEN = Path("/nonexistent-fuzz-dir")  # parse-only examples never touch their paths


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_arguments_parse_or_are_a_usage_error(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(SUBPARSERS)))
    argv = data.draw(_argv(name, GIVEN))
    parser = build_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as exc:
        assert exc.code == 2, (argv, exc.code)
        last = err.getvalue().strip().splitlines()[-1]
        assert last.startswith(("plateau", "usage")), (argv, err.getvalue())


# A runnable sweep has one target, a closed loopback port, and a small fixed load: the
# options that pick another target or size the load are fuzzed by the parse-only test.
SWEEP_FIXED = frozenset({"host", "--demo", "--url", "--db", "--engine", "--bench-command",
                         "--tokenizer", "--concurrency", "--num-prompts", "--step-seconds",
                         "--warmup"})


def _runnable_argv(data: st.DataObject, given_dir: Path) -> list[str]:
    db = ["--db", str(given_dir / "history.db")]
    if data.draw(st.integers(0, 9)) == 0:
        argv = data.draw(_argv("sweep", given_dir, SWEEP_FIXED))
        return [*argv, "--url", "http://127.0.0.1:1", "--concurrency", "1", "--num-prompts",
                "2", *db]
    name = data.draw(st.sampled_from(RUNNABLE[:-1]))
    argv = data.draw(_argv(name, given_dir))
    if name in ("history", "compare", "diagnose") and "--db" not in argv:
        argv += db
    return argv


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_runnable_commands_end_with_a_documented_code_and_write_only_where_told(
    data: st.DataObject,
) -> None:
    with _scratch() as (given_dir, home, work):
        argv = _runnable_argv(data, given_dir)
        name = argv[0]
        (given_dir / "server.log").write_text("[2026-11-30 10:00:00] server_args=x\n")
        code, err = _run(argv)
        assert code in DOCUMENTED_EXIT_CODES, (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        if code and name != "sweep":  # a sweep also prints its progress on stderr
            lines = err.strip().splitlines()
            assert any(line.startswith("plateau") for line in lines), (argv, err)
            assert "\x1b" not in err, (argv, err)
        assert _written(home) == [], argv
        assert _written(work) == [], argv


@st.composite
def _toml_value(draw: st.DrawFn, depth: int = 0) -> str:
    scalars = st.one_of(
        st.text(max_size=12).map(lambda s: json.dumps(s, ensure_ascii=True)),
        st.integers(-(2**63), 2**63 - 1).map(str),
        st.sampled_from(["nan", "inf", "-inf", "0.5", "1e3", "true", "false"]),
    )
    if depth >= 2:
        return draw(scalars)
    return draw(st.one_of(
        scalars,
        st.lists(_toml_value(depth + 1), max_size=3).map(lambda v: "[" + ", ".join(v) + "]"),
        st.dictionaries(st.sampled_from(KEYS), _toml_value(depth + 1), max_size=3).map(
            lambda d: "{" + ", ".join(f"{json.dumps(k)} = {v}" for k, v in d.items()) + "}"),
    ))


KEYS = ["theme", "default_host", "hosts", "profiles", "sweeps", "keymap", "ui", "name",
        "address", "port", "model_path", "flags", "concurrency", "ascii", "launch", "env",
        "local", "python", "run_dir", "tp-size", "gpu_interval_s", "a\nb", "x\x1b", ""]


@st.composite
def _config_text(draw: Any) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            lines.append(f"[{draw(st.sampled_from(['ui', 'profiles.main', 'sweeps.q']))}]")
        elif kind == 1:
            lines.append("[[hosts]]")
        elif kind == 2:
            lines.append(draw(st.text(max_size=30)))  # noise: anything at all
        lines.append(f"{json.dumps(draw(st.sampled_from(KEYS)))} = {draw(_toml_value())}")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(_config_text())
def test_the_config_loader_answers_any_text_with_one_line(text: str) -> None:
    path = Path("fuzz.toml")
    try:
        parse_config_text(text, path)
    except ConfigError as exc:
        message = str(exc)
        assert message.startswith("fuzz.toml"), message
        assert "\n" not in message and "\x1b" not in message, message
