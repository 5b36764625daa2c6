"""Lines in, typed events out: prefix parsing, classification and multi-line grouping.

Grouping rules (SGLang prints multi-line messages through `logging`, so only the first line has
the `[ts ranks]` prefix):
* a prefixed line always starts a new event;
* an unprefixed `Traceback (most recent call last):` continues the open event when that event
  announced it (ends with `:`, is a warning/error, or mentions an exception), else starts a
  traceback event of its own;
* inside a traceback or a catalogue entry marked `multiline`, unprefixed lines continue the event,
  except lines that are clearly standalone (tqdm bars, Python warnings, uvicorn level lines);
* otherwise only indented unprefixed lines continue (e.g. `  warnings.warn(` under a warning).
A group is capped at `max_group_lines` so a runaway block cannot grow without bound.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import repeat

from console.logs.catalogue import Catalogue, default_catalogue
from console.logs.classify import (
    SEVERITY_LITERALS,
    UVICORN_LEVELS,
    access_severity,
    severity_from_text,
)
from console.logs.line_format import (
    ACCESS,
    MAX_LINE_CHARS,
    PREFIX,
    PY_LOGGING,
    UVICORN_LEVEL,
    clean_line,
    logging_config_match,
)
from console.logs.models import EVENT_TWIN, EventKind, LogEvent, Severity, new_event
from console.logs.prefilter import compile_literals
from console.sglang.batch import BATCH_PREFIXES
from console.sglang.crash import CHAIN as _CHAIN
from console.sglang.crash import TRACEBACK
from console.sglang.prefix import damaged_groups, damaged_match, unglue_progress
from console.sglang.server_args import SERVER_ARGS
from console.text import redact_secrets

# Unprefixed lines that are never part of a preceding block.
_STANDALONE = re.compile(
    r"\S.*(?:\d+%\||\d+it/s\]|s/it\])"  # tqdm progress
    r"|\S+\.py:\d+: \w*Warning: "  # warnings.warn output
    r"|(?:TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL):\s"  # uvicorn without timestamp
)
_ANNOUNCES_TRACEBACK = re.compile(r":\s*$|[Ee]xception|[Ee]rror")

_MODE_NONE, _MODE_MULTI, _MODE_TRACEBACK = 0, 1, 2
_prefix_match = PREFIX.match
# uvicorn's access lines as printed by its default formatter (`INFO:` padded to 10 columns);
# any other spacing takes the general path, which accepts it too.
_ACCESS_HEAD = "INFO:     "
_ACCESS_AT = len(_ACCESS_HEAD)
_ACCESS_MATCH = ACCESS.match


def _access_severity(access: re.Match[str]) -> Severity:
    return access_severity(int(access.group(4)), access.group(2), access.group(3))


class EventAssembler:
    """Feed raw lines (any order of arrival is the file order); get completed events.

    `feed` returns the event that the new line completed (if any); the newest event stays open
    until the next head line or `flush()`, because its continuation may still be coming.
    """

    def __init__(
        self,
        catalogue: Catalogue | None = None,
        *,
        source: str | None = None,
        first_seq: int = 0,
        max_group_lines: int = 1000,
    ) -> None:
        self.catalogue = catalogue if catalogue is not None else default_catalogue()
        # One search decides for most non-batch lines: no catalogue literal and no severity
        # keyword means no catalogue entry and INFO (or the uvicorn level).
        self._hint = compile_literals((*self.catalogue.literals, *SEVERITY_LITERALS))
        self.source = source
        self.next_seq = first_seq
        self.max_group_lines = max_group_lines
        # The open event, built as if it had no continuation lines (the common case: closing
        # it costs nothing); rebuilt with its continuation lines when it has some. Its
        # `source` is the file its first line came from (a rotation may change self.source
        # before the event closes).
        self._open: LogEvent | None = None
        self._cont: list[str] = []
        self._mode = _MODE_NONE
        # Traceback mode: the exception line has been seen. Only read in traceback mode, and
        # reset whenever an event enters that mode.
        self._tb_after_exc = False

    @property
    def has_open(self) -> bool:
        return self._open is not None

    def feed_lines(
        self, lines: Iterable[str], offsets: Iterable[int | None] | None = None
    ) -> list[LogEvent]:
        """Feed many lines (optionally with their byte offsets); the events they completed.

        Same result as calling `feed` per line, but the bulk of a busy log (prefixed batch and
        access lines after an event without continuation lines) runs inline here with the
        state in locals: no method call and no intermediate object per line.
        """
        twin = EVENT_TWIN
        if twin is None:  # no cheap construction on this Python: the per-line path
            events = [self.feed(raw, offset) for raw, offset in zip(
                lines, repeat(None) if offsets is None else offsets, strict=offsets is not None)]
            return [event for event in events if event is not None]
        event_class = LogEvent
        out: list[LogEvent] = []
        append = out.append
        match = _prefix_match
        access_match = _ACCESS_MATCH
        batch_prefixes = BATCH_PREFIXES
        debug = Severity.DEBUG
        max_chars = MAX_LINE_CHARS
        access_head, access_at = _ACCESS_HEAD, _ACCESS_AT
        source = self.source
        head = self._open
        cont = self._cont
        seq = self.next_seq
        fast_head = False  # `head` was opened here: its mode (not yet stored) is _MODE_NONE
        positions: Iterable[int | None] = repeat(None) if offsets is None else offsets
        for raw, offset in zip(lines, positions, strict=offsets is not None):
            # `isprintable()` is False for `\r`, escapes and controls: clean text skips
            # clean_line's work entirely.
            line = raw if len(raw) <= max_chars and raw.isprintable() else clean_line(raw)
            if "api" in line or "password" in line or "hf_token" in line:  # cheap pre-check
                line = redact_secrets(line)
            found = match(line)
            if found is not None:
                message = line[found.end() :]
                if message.startswith(batch_prefixes):
                    # Batch lines are DEBUG by definition; no catalogue entry describes them.
                    timestamp, ranks = found.group(1, 2)
                    new_head = twin(seq, "sglang", (line,), message, debug, timestamp,
                                    ranks[1:], None, None, None, offset, source)
                elif message.startswith(access_head) and not found.group(2) and (
                    access := access_match(message, access_at)
                ) is not None:
                    severity = debug if access.group(4) < "400" else _access_severity(access)
                    new_head = twin(seq, "access", (line,), message[access_at:], severity,
                                    found.group(1), "", "INFO", None, None, offset, source)
                else:
                    new_head = None
                if new_head is not None:
                    new_head.__class__ = event_class  # see models.fast_constructor
                    if head is not None:
                        if cont:  # only a head from the general path has continuation lines
                            self._open = head
                            done = self._close()
                            cont = self._cont
                            if done is not None:
                                append(done)
                        else:
                            append(head)
                    head = new_head
                    seq += 1
                    fast_head = True
                    continue
            # Everything else: the general path, with the state handed over and back.
            if fast_head:
                self._mode = _MODE_NONE
                fast_head = False
            self._open = head
            self.next_seq = seq
            done = self._feed_clean(line, found, offset)
            if done is not None:
                append(done)
            head = self._open
            cont = self._cont
            seq = self.next_seq
        if fast_head:
            self._mode = _MODE_NONE
        self._open = head
        self.next_seq = seq
        return out

    def feed(self, raw: str, offset: int | None = None) -> LogEvent | None:
        line = raw if len(raw) <= MAX_LINE_CHARS and raw.isprintable() else clean_line(raw)
        if "api" in line or "password" in line or "hf_token" in line:  # cheap pre-check
            line = redact_secrets(line)
        return self._feed_clean(line, _prefix_match(line), offset)

    def _feed_clean(
        self, line: str, found: re.Match[str] | None, offset: int | None
    ) -> LogEvent | None:
        seq = self.next_seq
        self.next_seq = seq + 1
        level: str | None = None
        if found is None and (line[:1] == "(" or "%|" in line) and (
            rest := unglue_progress(line)
        ) is not None:
            found = PREFIX.match(rest)  # a Ray actor's prefix or a glued tqdm bar (prefix.py)
            if found is not None:
                line = rest
        if found is None:
            config = logging_config_match(line)
            if config is None and (damaged := damaged_match(line)) is not None:
                # An excerpt's damage: text before the bracket, a first line cut in its date.
                stamp, ranks, _gpu = damaged_groups(damaged)
                done = self._close() if self._open is not None else None
                self._start_message(line, line[damaged.end():], stamp, ranks, seq, offset)
                return done
            if config is None:
                if self._open is not None and self._continues(line):
                    self._cont.append(line)
                    return None
                done = self._close()
                self._start_unprefixed(line, seq, offset)
                return done
            # `2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 file.py:222] msg` (prefix.py)
            timestamp, level, ranks = config.group(1), config.group(2), config.group(3).rstrip()
            message = line[config.end() :]
        else:
            timestamp, ranks, gpu = found.group(1, 2, 3)
            ranks = ranks[1:]  # every rank alternative starts with one space
            if gpu is not None:  # 0.1/0.2 `[gpu_id=N] ` (prefix.py)
                ranks = f"{ranks} GPU{gpu}".lstrip()
            message = line[found.end() :]
        done = self._close() if self._open is not None else None
        self._start_message(line, message, timestamp, ranks, seq, offset, level)
        return done

    def _start_message(self, line: str, message: str, timestamp: str | None, ranks: str,
                       seq: int, offset: int | None, level: str | None = None) -> None:
        """Open the event of a prefixed line (its prefix read)."""
        if message.startswith(BATCH_PREFIXES):
            self._open = new_event(seq, "sglang", (line,), message, Severity.DEBUG, timestamp,
                                   ranks, level, None, None, offset, self.source)
            self._mode = _MODE_NONE
        else:
            self._start_prefixed(line, message, timestamp, ranks, seq, offset, level)

    def flush(self) -> LogEvent | None:
        """Close the open event (end of input, or the stream went quiet)."""
        return self._close()

    # -- starting events ------------------------------------------------------------------

    def _start_prefixed(
        self, line: str, message: str, timestamp: str | None, ranks: str, seq: int,
        offset: int | None,
        config_level: str | None = None,
    ) -> None:
        kind: EventKind = "sglang"
        level: str | None = None
        if config_level is not None:
            # A logging config's level: never below what the text says (SGLang logs some
            # warnings at INFO), never below the level either.
            severity, catalogue_id, mode, kind = self._classify(message, kind, None)
            severity = max(severity, UVICORN_LEVELS.get(config_level, Severity.INFO))
            self._open = new_event(seq, kind, (line,), message, severity, timestamp, ranks,
                                   config_level, catalogue_id, None, offset, self.source)
            self._mode = mode
            self._tb_after_exc = False
            return
        if not ranks and message[:1] in "TDIWEC":
            level_match = UVICORN_LEVEL.match(message)
            if level_match is not None:
                level = level_match.group(1)
                message = message[level_match.end() :]
                kind = "uvicorn"
        severity, catalogue_id, mode, kind = self._classify(message, kind, level)
        self._open = new_event(seq, kind, (line,), message, severity, timestamp, ranks, level,
                               catalogue_id, None, offset, self.source)
        self._mode = mode
        self._tb_after_exc = False

    def _start_unprefixed(self, line: str, seq: int, offset: int | None) -> None:
        kind: EventKind = "plain"
        level: str | None = None
        message = line
        if line.startswith(TRACEBACK):
            kind = "traceback"
            severity, catalogue_id, mode = Severity.ERROR, None, _MODE_TRACEBACK
        else:
            level_match = UVICORN_LEVEL.match(line) if line[:1] in "TDIWEC" else None
            if level_match is not None:
                level = level_match.group(1)
                message = line[level_match.end() :]
                kind = "uvicorn"
            elif line[:1].isdigit() and (logged := PY_LOGGING.match(line)) is not None:
                # `2025-04-08 08:20:14,581 - INFO - flashinfer.jit: ...`: a library's line,
                # at its own level (its time is another logger's: no launch opens on it).
                level = logged.group(2)
                message = line[logged.end() :]
            severity, catalogue_id, mode, kind = self._classify(message, kind, level)
        self._open = new_event(seq, kind, (line,), message, severity, None, "", level,
                               catalogue_id, None, offset, self.source)
        self._mode = mode
        self._tb_after_exc = False

    def _classify(
        self, message: str, kind: EventKind, level: str | None
    ) -> tuple[Severity, str | None, int, EventKind]:
        if kind == "uvicorn" and level == "INFO" and ' - "' in message:
            access = ACCESS.match(message)
            if access is not None:
                severity = access_severity(int(access.group(4)), access.group(2), access.group(3))
                return severity, None, _MODE_NONE, "access"
        if message.startswith(SERVER_ARGS):
            # The resolved-arguments dump (reference §2.4 item 2): flag names such as
            # `disable_fallback` or `retract_*` are not warnings. A launch milestone, not noise.
            return Severity.INFO, None, _MODE_NONE, kind
        hint = self._hint
        if hint is not None and hint.search(message) is None:
            # No literal: no catalogue entry, not a traceback, and severity_from_text is INFO.
            if level is not None:
                return UVICORN_LEVELS.get(level, Severity.INFO), None, _MODE_NONE, kind
            return Severity.INFO, None, _MODE_NONE, kind
        found = self.catalogue.match(message)
        mode = _MODE_TRACEBACK if TRACEBACK in message else _MODE_NONE
        if found is not None:
            entry = found.entry
            if mode == _MODE_NONE and entry.multiline:
                mode = _MODE_MULTI
            return entry.severity, entry.id, mode, kind
        if level is not None:
            return UVICORN_LEVELS.get(level, Severity.INFO), None, mode, kind
        return severity_from_text(message), None, mode, kind

    # -- continuation ---------------------------------------------------------------------

    def _continues(self, line: str) -> bool:
        if len(self._cont) + 1 >= self.max_group_lines:
            return False
        mode = self._mode
        if mode == _MODE_NONE:
            if line.startswith(TRACEBACK):
                head = self._open
                assert head is not None
                if head.severity >= Severity.WARNING or _ANNOUNCES_TRACEBACK.search(
                    head.message
                ):
                    self._mode = _MODE_TRACEBACK
                    self._tb_after_exc = False
                    return True
                return False
            return line[:1] in (" ", "\t")
        if _STANDALONE.match(line) is not None:
            return False
        if mode == _MODE_TRACEBACK:
            return self._traceback_continues(line)
        return True

    def _traceback_continues(self, line: str) -> bool:
        if not line or line[:1] in (" ", "\t"):
            return True
        if line.startswith(_CHAIN):
            self._tb_after_exc = False
            return True
        if line.startswith(TRACEBACK):
            # A chained traceback follows a chain line; after a finished one it is a new crash.
            previous = next((c for c in reversed(self._cont) if c.strip()), "")
            return not self._tb_after_exc or previous.startswith(_CHAIN)
        # The exception line, or a multi-line exception message after it.
        self._tb_after_exc = True
        return True

    # -- closing --------------------------------------------------------------------------

    def _close(self) -> LogEvent | None:
        head = self._open
        if head is None:
            return None
        self._open = None
        cont = self._cont
        if not cont:
            return head
        self._cont = []
        severity, catalogue_id, cause_id = head.severity, head.catalogue_id, None
        if self._mode == _MODE_TRACEBACK:
            severity = max(severity, Severity.ERROR)
            cause_id = self._exception_cause(cont)
            if catalogue_id is None:
                catalogue_id, cause_id = cause_id, None
        return new_event(head.seq, head.kind, (head.lines[0], *cont), head.message, severity,
                         head.timestamp, head.ranks, head.level, catalogue_id, cause_id,
                         head.offset, head.source)

    def _exception_cause(self, cont: list[str]) -> str | None:
        """Catalogue id of the exception line(s) at the end of a traceback."""
        checked = 0
        for line in reversed(cont):
            if not line or line[:1] in (" ", "\t"):
                continue
            found = self.catalogue.match(line)
            if found is not None:
                return found.entry.id
            checked += 1
            if checked >= 6:
                break
        return None


def parse_lines(lines: Iterable[str], catalogue: Catalogue | None = None) -> list[LogEvent]:
    """Parse a whole log (e.g. a file's lines without newlines) into events."""
    assembler = EventAssembler(catalogue)
    events = assembler.feed_lines(lines)
    last = assembler.flush()
    if last is not None:
        events.append(last)
    return events
