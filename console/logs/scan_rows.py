"""The rows a whole-log scan (`plateau logscan`) reads: one regex call per chunk of lines.

`ROWS.findall(text)`, on text whose every line ends in `\\n`, gives one tuple per line, in order.
A standard line (the bulk of a serving log: the exact `Decode batch` / `Prefill batch` shapes of
batch_stats.DECODE_FAST / PREFILL_FAST, or a uvicorn access line without ranks in printable
ASCII) gives its timestamp and the fields the scan uses; any other line gives only its text
(`RAW`), every other field empty. So the lines never become one Python call each: the scanner
walks the tuples (LogScanner.standard_rows), and the pipeline (scan_fast.py) sends the other
lines through the assembler.

Row layout (strings; `""` where a group did not take part): TS, the DP rank's number, then a
decode line's mark
(`D`) and fields, a prefill line's mark (`P`) and fields, an access line's method, path and
status, and RAW. `DECODE_MARK` is non-empty exactly on decode rows, `PREFILL_MARK` on prefill
rows, `A_STATUS` on access rows, `TS` on every standard row.
"""

from __future__ import annotations

import re
from typing import Any

from console.sglang.batch import DECODE_SHAPE, PREFILL_SHAPE, ScanValues, batch_shape
from console.sglang.prefix import RANKS_DP, TIMESTAMP

Row = tuple[Any, ...]
"""One line's groups (strings, `""` when absent); TS is None in `batch_row`'s rows for an event
without a timestamp."""


# uvicorn's default access format (`INFO:` padded to 10 columns), printable ASCII, no ranks:
# the assembler reads such a line as an access event with the same method, path and status
# (line_format.ACCESS accepts more: those lines take the general path). The client is not kept.
# No quote in the client or path, and neither ending in `api-key`: then redact_secrets cannot
# change the line's shape, method, status or path (its patterns need `key=` right before a
# quote, or `--api-key` before a space, and reach forward only, so in the reason phrase at the
# end they change nothing the scan reads); these lines need no secret check.
_TOKEN = r"[!#-&(-~]+(?<!api-key)"
_ACCESS = (rf'INFO:     {_TOKEN} - "([A-Z]+) ({_TOKEN}) HTTP/[0-9.]+" ([0-9]{{3}})'
           r"(?: [ -~]*|)")


def _marked(shape: str, groups: tuple[str, ...]) -> str:
    """The shape with only `groups` captured, and its first letter as a group (the mark)."""
    text = batch_shape(shape, groups)
    return f"({text[0]}){text[1:]}"


_DECODE = _marked(DECODE_SHAPE, ("running", "usage", "accept_len", "graph", "rate", "queue"))
_PREFILL = _marked(PREFILL_SHAPE, ("usage", "running", "queue", "rate"))
# ` TP<n>` first: the ranks of most serving logs, read without trying each rank part
# (RANKS_DP alone accepts the same prefixes, and captures the DP rank: a node sums DP ranks).
ROWS = re.compile(
    rf"\[({TIMESTAMP})(?:(?: TP\d+|{RANKS_DP})\] ?(?:{_DECODE}|{_PREFILL})|\] ?{_ACCESS})\n"
    r"|(.*)\n",
    re.ASCII,
)

TS, DP = 0, 1
DECODE_MARK, D_RUN, D_USE, D_ALEN, D_GRAPH, D_GEN, D_QUEUE = range(2, 9)
PREFILL_MARK, P_USE, P_RUN, P_QUEUE, P_INPUT = range(9, 14)
A_METHOD, A_PATH, A_STATUS = range(14, 17)
RAW = 17
WIDTH = RAW + 1
# The layout follows the shapes' groups, in this order (LogScanner._tally unpacks rows so).
assert ROWS.groups == WIDTH


def batch_row(values: ScanValues, timestamp: str | None, dp: str = "") -> Row:
    """The row of a batch line read by `scan_values` (a variant outside the fast shapes), so
    that one code path (LogScanner._tally) accounts every batch line. `dp`: the DP rank's
    number (`"3"` for `DP3`), `""` without one."""
    decode, running, queue, usage, graph, rate, accept = values
    row: list[Any] = [""] * WIDTH
    row[TS] = timestamp
    row[DP] = dp
    fields: tuple[tuple[int, object], ...]
    if decode:
        row[DECODE_MARK] = "D"
        fields = ((D_RUN, running), (D_QUEUE, queue), (D_USE, usage), (D_GRAPH, graph),
                  (D_GEN, rate), (D_ALEN, accept))
    else:
        row[PREFILL_MARK] = "P"
        fields = ((P_RUN, running), (P_QUEUE, queue), (P_USE, usage), (P_INPUT, rate))
    for index, value in fields:
        row[index] = "" if value is None else str(value)  # str(float) reads back exactly
    return tuple(row)
