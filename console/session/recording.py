"""Recording a session's event feed to a file, and reading it back for a replay.

A recording is JSON lines: a header (format version, the hosts, when it started), then one
line per session event: seconds since the start, the event's type name and its fields. Every
event and payload is a typed dataclass or pydantic model, so pydantic writes and validates
them; a file from elsewhere is checked line by line and a bad line is named, never trusted:
every string read back is sanitised again (a crafted file must not reach the terminal with
escapes), and no secret is written (log lines are redacted where they enter the core; host
entries keep no key file paths).
An operator hands an incident to a colleague as this file (`plateau replay FILE`).
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import IO, Any

from pydantic import TypeAdapter, ValidationError

from console.config_models import HostConfig
from console.errors import UsageError
from console.session import events as ev
from console.session.events import SessionEvent
from console.text import sanitize

FORMAT = "plateau-recording"
_PRIVATE_HOST_FIELDS = {"identity_files", "known_hosts_file"}
VERSION = 1

EVENT_TYPES: dict[str, type[SessionEvent]] = {
    cls.__name__: cls
    for cls in (
        ev.ConnectionChanged, ev.GpuUpdate, ev.TopologyUpdate, ev.LogBatch, ev.StatsUpdate,
        ev.ServerUpdate, ev.SweepProgress, ev.SweepPointDone, ev.SweepDone, ev.ABUpdate,
        ev.HostKeyUnknown, ev.HostKeyChanged, ev.Problem,
    )
}
FORMER_NAMES: dict[str, str] = {"ServerStats": "StatsUpdate", "ServerStatus": "ServerUpdate"}
"""Event types renamed since recordings were first written (they clashed with
console.logs.server_stats.ServerStats and console.server.lifecycle.ServerStatus, which mean
other things): an old recording's line of the former name reads as the new type."""


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    # The events name their sweep and A/B payloads and the GPU models for type checkers only
    # (the console's start-up imports neither the run models nor the GPU models); pydantic
    # resolves those names here, in this frame's namespace.
    from console.bench.models import StepResult  # noqa: F401
    from console.gpu.models import GpuHeader, GpuSample  # noqa: F401
    from console.jobs.ab_models import ABResult  # noqa: F401

    return TypeAdapter(EVENT_TYPES[name])


@dataclass(frozen=True)
class RecordedEvent:
    at_s: float
    """Seconds since the recording started."""
    event: SessionEvent


@dataclass(frozen=True)
class Recording:
    hosts: list[HostConfig]
    started_at: float
    """Unix time the recording started."""
    events: list[RecordedEvent]
    notes: list[str] = field(default_factory=list)
    """What was left out when reading (a torn last line, events past the bound)."""

    def for_host(self, name: str) -> list[RecordedEvent]:
        return [r for r in self.events if r.event.host == name]


class Recorder:
    """Appends each event to a recording file as it is emitted (line-buffered, so a crash
    keeps everything up to the last event)."""

    def __init__(self, path: Path, hosts: list[HostConfig]) -> None:
        self.path = path
        try:
            self._file: IO[str] | None = _open_private(path)
        except OSError as exc:
            raise UsageError(f"cannot write the recording {path}: {exc.strerror}") from None
        self._started = time.monotonic()
        self.error: str | None = None
        header = {
            "format": FORMAT,
            "version": VERSION,
            "started_at": time.time(),
            "hosts": [h.model_dump(mode="json", exclude=_PRIVATE_HOST_FIELDS) for h in hosts],
        }
        try:
            self._file.write(json.dumps(header) + "\n")
        except OSError as exc:  # /dev/full, a full disk, a closed pipe
            self.close()
            raise UsageError(f"cannot write the recording {path}: {exc.strerror}") from None
        self.count = 0

    def write(self, event: SessionEvent) -> None:
        if self._file is None:
            return
        name = type(event).__name__
        line = {
            "t": round(time.monotonic() - self._started, 4),
            "type": name,
            "event": _adapter(name).dump_python(event, mode="json"),
        }
        try:
            text = json.dumps(line, allow_nan=False)
        except ValueError:  # a host's nan/inf somewhere in the event: rare, so walk it then
            text = json.dumps(_finite_json(line), allow_nan=False)
        try:
            self._file.write(text + "\n")
        except OSError as exc:  # the disk filled up mid-recording: keep what was written
            self.error = f"the recording stopped after {self.count} event(s): {exc.strerror}"
            self.close()
            return
        self.count += 1

    def close(self) -> None:
        """Close the file; a failure to flush (a full disk) is kept in `error`, not raised."""
        if self._file is not None:
            file, self._file = self._file, None
            try:
                file.close()
            except OSError as exc:
                self.error = self.error or f"the recording is incomplete: {exc.strerror}"


MAX_LINE_BYTES = 64 << 20
"""An event line longer than this is not one Plateau wrote (a log batch is a few MB at most)."""
MAX_EVENTS = 500_000
"""Events read from one recording: about 300 MB in memory. A longer one is played up to here,
and the replay says so."""


def read_recording(path: Path, *, max_events: int = MAX_EVENTS) -> Recording:
    """The recording at `path`, read line by line (bounded memory). A bad line is a UsageError
    naming it, except a torn last line (a recorder killed mid-write), which is left out;
    `notes` says what was left out."""
    try:
        with path.open("rb") as handle:
            return _read(path, handle, max_events)
    except OSError as exc:
        raise UsageError(f"cannot read the recording {path}: {exc.strerror}") from None


def _read(path: Path, handle: IO[bytes], max_events: int) -> Recording:
    lines = _numbered_lines(path, handle)
    hosts, started_at = _header(path, (item[:2] for item in lines))
    events: list[RecordedEvent] = []
    notes: list[str] = []
    for number, line, complete in lines:
        if not line.strip():
            continue
        if len(events) >= max_events:
            notes.append(f"played the first {max_events} events; the rest (from line "
                         f"{number}) was left out")
            break
        try:
            events.append(_event(path, number, line))
        except UsageError:
            if complete:
                raise
            notes.append(f"line {number} was cut off mid-write and left out")
    return Recording(hosts=hosts, started_at=started_at, events=events, notes=notes)


def _numbered_lines(path: Path, handle: IO[bytes]) -> Iterator[tuple[int, str, bool]]:
    """(number, text, ended with a newline) for each line; undecodable bytes replaced."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise UsageError(f"{path}:{number}: a line of more than {MAX_LINE_BYTES >> 20} MB: "
                             "not a plateau recording")
        complete = raw.endswith(b"\n")
        yield number, raw.decode("utf-8", errors="replace").rstrip("\r\n"), complete


def _header(path: Path, lines: Iterator[tuple[int, str]]) -> tuple[list[HostConfig], float]:
    first = next(lines, (1, ""))[1]
    if len(first) > 1 << 20:  # a header names a few hosts
        raise UsageError(f"{path}:1: not a plateau recording (a first line of {len(first)} "
                         "characters)")
    try:
        data = json.loads(first)
        if data.get("format") != FORMAT:
            raise ValueError("not a plateau recording")
        if data.get("version") != VERSION:
            raise ValueError(f"recording format version {data.get('version')!r}, "
                             f"this plateau reads {VERSION}")
        hosts = [HostConfig.model_validate(_sanitized(h)) for h in data["hosts"]]
        return hosts, float(data.get("started_at", 0.0))
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError,
            RecursionError) as exc:
        raise UsageError(f"{path}:1: not a plateau recording ({_why(exc)})") from None


def _event(path: Path, number: int, line: str) -> RecordedEvent:
    try:
        data = json.loads(line)
        name = data["type"]
        name = FORMER_NAMES.get(name, name) if isinstance(name, str) else name
        if name not in EVENT_TYPES:
            raise ValueError(f"unknown event type {name!r}")
        event = _adapter(name).validate_python(_sanitized(data["event"]))
        return RecordedEvent(float(data["t"]), event)
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError,
            RecursionError) as exc:  # RecursionError: JSON nested 100,000 deep
        raise UsageError(f"{path}:{number}: bad event line ({_why(exc)})") from None


def _open_private(path: Path) -> IO[str]:
    """`path` truncated for writing, readable by its owner only (0600, also when it existed):
    a recording holds the host's log lines and state, which are the operator's business."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # never chmod /dev/stdout or a pipe
            os.fchmod(fd, 0o600)
        return os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    except BaseException:
        os.close(fd)
        raise


def _finite_json(value: Any) -> Any:
    """`value` with every non-finite float spelled as a string ("nan", "inf", "-inf"): a
    host's `nan` is recorded as what it was (strict JSON has no NaN) and pydantic reads the
    string back as the float."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, list):
        return [_finite_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _finite_json(item) for key, item in value.items()}
    return value


def _sanitized(value: Any) -> Any:
    """`value` (parsed JSON) with every string sanitised."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, list):
        return [_sanitized(item) for item in value]
    if isinstance(value, dict):
        return {key: _sanitized(item) for key, item in value.items()}
    return value


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]!r}"
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
