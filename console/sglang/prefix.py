"""Every line prefix SGLang (and the logging configs people put around it) writes.

Shapes, each checked against SGLang's source:

* `[2026-02-19 05:21:47 DP1 PP0 ATTN_CP0 MOE_DP0 TP5 EP5] msg`: `configure_logger`,
  `format = f"[%(asctime)s{maybe_ms}{prefix}] %(message)s"`, datefmt `%Y-%m-%d %H:%M:%S`,
  `.mmm` with SGLANG_LOG_MS=1 (0.5.23 `srt/utils/common.py:2618-2638`). The rank parts come
  from `run_scheduler_process` in this order in 0.5.23 (`srt/managers/scheduler.py:6279-6291`:
  DP, PP, ATTN_CP, MOE_DP, TP, EP) but in other orders in older releases (0.4.x: DP, TP, PP;
  forks: DP, TP, EP, PP), so the parts are read in any order. Encoder disaggregation writes
  ` encode_server` / ` encode_dp_worker[N]` (0.5.23
  `srt/disaggregation/encoder/http_server.py:211`).
* `[16:43:29 TP0] msg`: time only, as public logs show (a `datefmt="%H:%M:%S"` setup; real
  lines in tests/data/logs/real/).
* `[2024-07-20 10:00:00 TP0] [gpu_id=0] Decode batch. ...`: 0.1/0.2 put the GPU in the message
  (`srt/managers/controller/tp_worker.py` f"[gpu_id={self.gpu_id}] Decode batch. "); read as
  a rank part `GPU0` so the message starts at the text.
* `2025-10-20 03:02:22 INFO 31223 [DP3 TP3 EP3 scheduler_metrics_mixin.py:222] msg`: a
  SGLANG_LOGGING_CONFIG_PATH dictConfig (0.5.x `configure_logger` reads it, common.py:2619)
  with `%(asctime)s %(levelname)s %(process)d [%(prefix)s %(filename)s:%(lineno)d]`-style
  formats (seen in sglang issue #11791's log).
* `INFO:     127.0.0.1:5 - "GET / HTTP/1.1" 200 OK`: uvicorn before SGLang configures it
  (no prefix), and `[ts] INFO:     ...` after (0.5.23 common.py:3509-3521).
* none: tqdm bars, tracebacks, print() output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

# `(?:x|)` rather than `(?:x)?`: the same matches, faster in `re`. ASCII: \d is [0-9].
DATE_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{3}|)"
TIMESTAMP = r"(?:\d{4}-\d\d-\d\d |)\d\d:\d\d:\d\d(?:[.,]\d{3}|)"
"""A prefix's timestamp: date and time, or the time alone."""
RANK_NAMES = ("DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP", "NODE", "GPU")
_RANK = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP|NODE|N)\d+"
RANKS = rf"(?: {_RANK})*|(?: encode_server| encode_dp_worker\[\d+\])"
"""The rank parts after the timestamp, each with its leading space, in any order."""
RANKS_DP = (r"(?: DP(\d+)|)(?: (?:PP|ATTN_CP|MOE_DP|TP|EP|NODE|N)\d+)*"
            r"|(?: encode_server| encode_dp_worker\[\d+\])")
"""RANKS with the DP rank as a group (DP comes first in every SGLang release's prefix)."""
_GPU_ID = r"(?:\[gpu_id=(\d+)\] |)"
# `[` may be missing: an excerpt whose first line was cut at its start (`2026-05-24 03:51:44
# TP0] Decode batch, ...`, sglang issue #26248 as pasted); the date keeps that unambiguous.
PREFIX = re.compile(rf"(?:\[|(?=\d{{4}}-\d\d-\d\d \d))({TIMESTAMP})({RANKS})\] ?{_GPU_ID}",
                    re.ASCII)
"""group 1: timestamp, 2: rank parts (with a leading space, or empty), 3: 0.1/0.2 gpu_id."""
DAMAGED = re.compile(
    rf"(?:\d{{1,3}}-\d\d-\d\d |\d{{0,2}}-?\d\d |)(\d\d:\d\d:\d\d(?:[.,]\d{{3}}|))({RANKS})\] ?"
    rf"{_GPU_ID}"
    rf"|[^\[\n]{{1,240}}? \[({TIMESTAMP})({RANKS})\] ?{_GPU_ID}", re.ASCII)
"""A prefix an excerpt damaged, two ways:
* its first line cut inside the date, `025-06-23 18:55:20 TP0] Decode batch. ...` (the
  ranks and the message survive; the stamp, no longer a date, is not read as one: groups 1-3);
* text before the bracket, `@c:\\...\\log.txt [2026-08-23 09:05:37 TP0 EP0] Decode batch, ...`
  (a file name or a tool's tag pasted in front; groups 4-6)."""
PY_LOGGING = re.compile(
    rf"({DATE_TIME}) - (TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL) - ", re.ASCII)
"""Python logging's `%(asctime)s - %(levelname)s - ...` shape, as libraries beside SGLang print
it: flashinfer's JIT logger writes `2025-04-08 08:20:14,581 - INFO - flashinfer.jit: Prebuilt
kernels not found, using JIT backend` (group 1: timestamp, 2: level). The level is the
library's own word for it: an INFO line is not a warning however it is worded."""
LOGGING_CONFIG = re.compile(
    rf"({DATE_TIME}) (TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL) \d+ "
    rf"\[ ?((?:{_RANK} )*)(?:[\w.-]+:\d+|)\] ", re.ASCII)
"""group 1: timestamp, 2: level, 3: rank parts (each followed by a space)."""
GLUED_PROGRESS = re.compile(rf"[^\[\n]*\d+%\|[^|]*\|[^\[]*\[[^\]]*\](?=\[{DATE_TIME}[ \]])",
                            re.ASCII)
"""A tqdm bar whose `\r` was lost when the log was copied, glued to the line after it:
`  12%|█▎        | 1/8 [00:22<02:35, 22.27s/it][2026-01-17 10:37:08 DP0 TP0 EP0] Decode ...`."""
RAY_ACTOR = re.compile(r"\([\w.:-]+ pid=\d+(?:, ip=[\d.]+|)\) ", re.ASCII)
"""Ray's prefix on an actor's output: `(SGLangEngine pid=41820) [2026-03-22 13:53:37 TP0] ...`
(SGLang run as a Ray actor, e.g. by RL frameworks)."""
UVICORN_LEVEL = re.compile(r"(TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL):\s+")
ACCESS = re.compile(r'(\S+) - "([A-Z]+) (\S+) HTTP/[\d.]+" (\d{3})(?: (.*))?$')
_RANK_PART = re.compile(r"([A-Z_]+?)(\d+)", re.ASCII)


@dataclass(frozen=True, slots=True)
class Prefix:
    """A line's prefix, read."""

    timestamp: str | None
    ranks: str
    """Rank parts separated by one space (`DP1 TP5`), `""` when none."""
    message: str
    """The line after the prefix."""
    level: str | None = None
    """The level name when the format writes one (a logging config, uvicorn)."""
    shape: str = "none"
    """`date_time_ranks`, `time_ranks`, `logging_config` or `none`."""


def parse_prefix(line: str) -> Prefix:
    """The prefix of any line SGLang writes (shape `none` when it has none)."""
    found = PREFIX.match(line)
    if found is not None:
        stamp, ranks, gpu = found.group(1, 2, 3)
        ranks = ranks[1:]
        if gpu is not None:
            ranks = f"{ranks} GPU{gpu}".lstrip()
        shape = "date_time_ranks" if len(stamp) > 12 else "time_ranks"
        return Prefix(stamp, ranks, line[found.end():], None, shape)
    found = logging_config_match(line)
    if found is not None:
        return Prefix(found.group(1), found.group(3).rstrip(), line[found.end():],
                      found.group(2), "logging_config")
    rest = unglue_progress(line)
    if rest is not None:
        return parse_prefix(rest)
    found = damaged_match(line)
    if found is not None:
        stamp, ranks, _gpu = damaged_groups(found)
        shape = "none" if stamp is None else (
            "date_time_ranks" if len(stamp) > 12 else "time_ranks")
        return Prefix(stamp, ranks, line[found.end():], None, shape)
    return Prefix(None, "", line)


def is_sglang_line(line: str) -> bool:
    """A line in a shape SGLang writes: any prefix above (damaged ones too), or uvicorn's
    level (`INFO:     127.0.0.1:5 - "GET / HTTP/1.1" 200 OK`) before SGLang configures it."""
    prefix = parse_prefix(line)
    if prefix.timestamp is not None or prefix.ranks:
        return True
    return line[:1] in "TDIWEC" and UVICORN_LEVEL.match(line) is not None


def damaged_match(line: str) -> re.Match[str] | None:
    """DAMAGED's match, after cheap checks (both shapes hold `] ` early in the line)."""
    close = line.find("] ", 0, 300)
    if close < 0 or line[:1] == "[":
        return None
    return DAMAGED.match(line)


def damaged_groups(found: re.Match[str]) -> tuple[str | None, str, str | None]:
    """(timestamp, rank parts without the leading space, 0.1/0.2 gpu id) of a DAMAGED
    match; no timestamp for a cut date (a time without its day would be read as another
    day's)."""
    stamp: str | None
    if found.group(1) is not None:
        stamp, ranks, gpu = None, found.group(2), found.group(3)
    else:
        stamp, ranks, gpu = found.group(4, 5, 6)
    ranks = ranks[1:]
    if gpu is not None:
        ranks = f"{ranks} GPU{gpu}".lstrip()
    return stamp, ranks, gpu


def unglue_progress(line: str) -> str | None:
    """The line after a Ray actor's prefix (RAY_ACTOR) or a glued tqdm bar (GLUED_PROGRESS);
    None when it has neither."""
    if line[:1] == "(":
        found = RAY_ACTOR.match(line)
        if found is not None:
            return line[found.end():]
    if "%|" not in line:
        return None
    found = GLUED_PROGRESS.match(line)
    return None if found is None else line[found.end():]


def logging_config_match(line: str) -> re.Match[str] | None:
    """LOGGING_CONFIG's match, after a one-character check (most lines start with `[`)."""
    if not line[:1].isdigit():
        return None
    return LOGGING_CONFIG.match(line)


def rank_parts(ranks: str) -> dict[str, int]:
    """`DP1 TP5` -> {"DP": 1, "TP": 5}; `N3` is read as NODE."""
    out: dict[str, int] = {}
    for part in ranks.split():
        found = _RANK_PART.fullmatch(part)
        if found is not None:
            name = found.group(1)
            out["NODE" if name == "N" else name] = int(found.group(2))
    return out


def dp_rank(ranks: str) -> str:
    """The DP part of a rank string (`DP3`), `""` when there is none: the key a node sums by."""
    if not ranks.startswith("DP"):
        index = ranks.find(" DP")
        if index < 0:
            return ""
        ranks = ranks[index + 1:]
    end = ranks.find(" ")
    return ranks if end < 0 else ranks[:end]


_TIME_ONLY_DATE = "1900-01-01 "
_EPOCH = datetime(1900, 1, 1)


def parse_timestamp(value: str) -> datetime | None:
    """A prefix's timestamp as a datetime (`.123`/`,123` kept; a time alone is put on
    1900-01-01, so gaps within one day are right); None when it is not one."""
    if len(value) <= 12:
        value = _TIME_ONLY_DATE + value
    try:
        return datetime.fromisoformat(value.replace(",", "."))
    except ValueError:
        return None


def timestamp_seconds(value: str) -> float | None:
    """parse_timestamp as seconds (from a fixed naive epoch: no timezone, no DST), for gaps."""
    when = parse_timestamp(value)
    return None if when is None else (when - _EPOCH).total_seconds()
