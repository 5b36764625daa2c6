"""Issue 13's attack pass, one case per test row: each bad input is one line on stderr and a
usage exit (2), never a traceback, never an unbounded read."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from console.cli import main
from console.commands.logscan import scan_stream
from console.tomlfile import MAX_TOML_BYTES
from tests.support.many_hosts import config_text

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

HUGE_RUN_ID = "1" * 40


def _one_line_usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("plateau"), err
    return last


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["sweep", "--url", "http://[::1"], "argument --url: not a valid URL"),
        (["sweep", "--url", "http://127.0.0.1:9", "--engine", "bench-serving",
          "--bench-command", "'"], "argument --bench-command: cannot split"),
        (["history", "--show", HUGE_RUN_ID], "argument --show: must be at most"),
        (["history", "--delete", HUGE_RUN_ID], "argument --delete: must be at most"),
        (["history", "--export", HUGE_RUN_ID], "argument --export: must be at most"),
        (["compare", "1", HUGE_RUN_ID], "argument RUN_B: must be at most"),
        (["server", "status", "--demo", "--startup-timeout", "nan"], "must be a finite number"),
        (["server", "status", "--demo", "--startup-timeout", "-1"], "must be greater than 0"),
        (["sweep", "--demo", "--workers", "0"], "argument --workers: must be at least 1"),
        (["sweep", "--demo", "--workers", "-1"], "argument --workers: must be at least 1"),
        (["gpus", "--demo", "--count", "-1"], "argument --count: must be at least 0"),
        (["gpus", "--demo", "--interval", "0"], "argument --interval: must be at least 0.25"),
        (["gpus", "--demo", "--interval", "-1"], "argument --interval: must be at least 0.25"),
        (["sweep", "--demo", "--label", "ok\nplateau: fake line"], "control characters"),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line(
    argv: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: tracebacks (InvalidURL, ValueError, OverflowError) or accepted silently
    # (nan never times out, --count -1 ran forever, --workers 0).
    db = ["--db", str(tmp_path / "h.db")] if argv[0] in ("sweep", "history", "compare") else []
    assert expected in _one_line_usage_error([*argv, *db], capsys)
    assert not (tmp_path / "h.db").exists() or argv[0] != "sweep"


def test_unknown_theme_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Before: exit 0 with the default theme, nothing said.
    line = _one_line_usage_error(
        ["snapshot", "--demo", "--theme", "nope", "--out", str(tmp_path / "s.txt")], capsys)
    assert line.startswith("plateau: --theme: unknown theme 'nope' (known: ")
    assert "plateau-dark" in line and not (tmp_path / "s.txt").exists()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_config_from_a_device_is_bounded(
    device: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: grew to gigabytes, then MemoryError.
    line = _one_line_usage_error(["config", "check", device], capsys)
    assert line == f"plateau: {device}: config file is larger than 4 MiB; is this the right file?"
    monkeypatch.setenv("PLATEAU_CONFIG", device)
    assert _one_line_usage_error(["server", "status"], capsys) == line


def test_deeply_nested_toml_is_one_line(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")  # before: RecursionError
    line = _one_line_usage_error(["config", "check", str(path)], capsys)
    assert line == f"plateau: {path}: invalid TOML: values nested too deeply"


def test_a_config_just_under_the_bound_still_loads(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.toml"
    text = config_text(10)
    path.write_text(text + "#" * (MAX_TOML_BYTES - len(text) - 1) + "\n")
    assert main(["config", "check", str(path)]) == 0
    assert "OK (10 host(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        ('[profiles."a\\nplateau: fake"]\nmodel_path = "m"\n',
         "profiles: profile name 'a\\nplateau: fake' must not contain control characters"),
        ('[profiles.a]\nmodel_path = "m\\u001b[31m"\n',
         ":2: profiles.a.model_path: value must not contain control characters"),
        ('[sweeps."q\\r"]\n', "sweep name 'q\\r' must not contain"),
    ],
)  # fmt: skip
def test_control_characters_in_names_and_model_path(
    toml: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: printed raw, so a name could fake output lines or drive the terminal.
    path = tmp_path / "c.toml"
    path.write_text(toml)
    line = _one_line_usage_error(["config", "check", str(path)], capsys)
    assert expected in line and "\x1b" not in line and "\r" not in line


def test_gpus_without_a_config_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PLATEAU_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file anywhere
    line = _one_line_usage_error(["gpus", "--once"], capsys)
    # Before: "unknown host None".
    assert line.startswith("plateau: no hosts configured (no config file found): add a [[hosts]]")
    assert "--demo" in line and "None" not in line


def test_config_show_of_2000_hosts_completes(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    # Before: 282 s (quadratic); the speed itself is measured by tests/bench/bench_config_show.
    path = tmp_path / "many.toml"
    path.write_text(config_text(2000))
    assert main(["--config", str(path), "config", "show"]) == 0
    out = capsys.readouterr().out
    assert f'hosts[1999].name = "gpu-box-1999"    # {path}:' in out
    assert f"profiles.main.flags.tp-size = 2    # {path}:3" in out  # inside an inline table


class _Zeros(io.RawIOBase):
    """`size` NUL bytes and no newline, made on the fly (like /dev/zero, but it ends)."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        count = min(len(view), self.left)
        view[:count] = bytes(count)
        self.left -= count
        return count


def test_logscan_of_a_20mb_line_stays_in_bounded_memory() -> None:
    # Before: the whole line was held (2 GB of /dev/zero: MemoryError).
    size = 20 << 20
    tracemalloc.start()
    try:
        report = scan_stream(io.BufferedReader(_Zeros(size)), source="<zeros>")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.lines == 1
    assert peak < 12 << 20, f"peak {peak / 2**20:.1f} MiB for a {size >> 20} MiB line"


def test_logscan_of_a_file_that_fails_to_read_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Reading /proc/self/mem at offset 0 fails with EIO: a real read error, not a mock.
    assert main(["logscan", "/proc/self/mem"]) == 1
    err = capsys.readouterr().err
    assert err == "plateau: logscan: /proc/self/mem: cannot read: Input/output error\n"


def test_logscan_cuts_an_overlong_line_and_keeps_going(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "server.log"
    long_line = b"x" * (3 << 20)
    path.write_bytes(long_line + b"\n[2026-11-30 10:00:00] server_args=ServerArgs()\n")
    assert main(["logscan", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lines"] == 2
    assert report["launches"][0]["start_line"] == 2  # the line after the cut one is read


def test_long_and_short_lines_are_sanitised_alike() -> None:
    from console.text import sanitize

    sample = "ok \x00\x07\x1b[31m\x7f\x85\x9b\u2028\u202e\u2067\ud800 end"
    long_text = sample * (70_000 // len(sample) + 1)  # past the translate() threshold
    assert sanitize(long_text) == sanitize(sample) * (70_000 // len(sample) + 1)
