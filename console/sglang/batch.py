"""`Prefill batch` / `Decode batch` lines of every SGLang release, as typed stats.

Fields are read as `key: value` pairs, never by position: which fields a line has depends on
the version, spec decoding, PD disaggregation, hybrid pools and MFU metrics. Shapes, by source:

* 0.1-0.3 (`srt/managers/controller/tp_worker.py`, `tp_worker.py`): `Decode batch. #running-req:
  N, #token: N, token usage: x, gen throughput (token/s): y, #queue-req: z` (no graph field:
  its graph state is UNKNOWN, never "off"); `Prefill batch. #new-seq: .., #new-token: ..,
  #cached-token: .., cache hit rate: 12.34%, token usage: .., #running-req: .., #queue-req: ..`.
* 0.4-0.5.x (`srt/managers/scheduler_metrics_mixin.py`, e.g. commit 01bb3c8): `Decode batch, ...,
  [accept len: x, accept rate: y, ][pre-allocated usage: .., #prealloc-req: .., #transfer-req:
  .., #retracted-req: .., ]cuda graph: True, gen throughput (token/s): y, #queue-req: z, ` (a
  trailing comma in several releases); hybrid pools `#full token: N, full token usage: x,
  #swa token: N, swa token usage: y` or `..., mamba num: N, mamba usage: y`; `cpu graph` /
  `npu graph` / `musa graph` by device.
* 0.5.23 (`srt/managers/scheduler_components/metrics_reporter.py:753-783,963-1058`): the same
  plus PD prefill `#bootstrap-req/#inflight-req/#optimistic-req`, `#replay-token`, and with
  --enable-mfu-metrics `est. decode TFLOPS/s (per GPU): ..`, `est. read BW (GB/s per GPU): ..`.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Literal

from console.fast_objects import fast_constructor

DECODE_BATCH = "Decode batch"
PREFILL_BATCH = "Prefill batch"
BATCH_PREFIXES = (DECODE_BATCH, PREFILL_BATCH)
"""Every batch message starts with one of these (the 0.1/0.2 `[gpu_id=N] ` is prefix.py's)."""

_HEAD = re.compile(r"(Prefill|Decode) batch(?: \[(\d+)\]|)[.,] ?")
# The exact shape 0.5.x prints without spec variants, PD, hybrid pools or MFU metrics (the
# bulk of a real log): one match reads every field. Anything else misses and takes the
# general key: value parser, which gives the same values for these lines (a test compares).
# `batch_shape` makes the pattern text with the fields wanted as groups (the whole-log scan
# reads fewer: console/logs/scan_rows.py). The optional trailing `, ` is the 0.4-0.5.x form.
_NUM = r"[0-9]+(?:\.[0-9]+|)"
_INT = r"[0-9]+"
DECODE_SHAPE = (
    r"Decode batch(?: \[{it}\]|), #running-req: {running}, #token: {tokens}, "
    r"token usage: {usage}, (?:accept len: {accept_len}, accept rate: {accept_rate}, |)"
    r"cuda graph: {graph}, gen throughput \(token/s\): {rate}, #queue-req: {queue}(?:, |,|)"
)
PREFILL_SHAPE = (
    r"Prefill batch(?: \[{it}\]|), #new-seq: {new_seq}, #new-token: {new_token}, "
    r"#cached-token: {cached}, token usage: {usage}, #running-req: {running}, "
    r"#queue-req: {queue}, #pending-token: {pending}, cuda graph: {graph}, "
    r"input throughput \(token/s\): {rate}"
)
_FIELDS = {"it": _INT, "running": _INT, "tokens": _INT, "usage": _NUM, "accept_len": _NUM,
           "accept_rate": _NUM, "graph": "True|False", "rate": _NUM, "queue": _INT,
           "new_seq": _INT, "new_token": _INT, "cached": _INT, "pending": _INT}


def batch_shape(shape: str, groups: Collection[str] | None = None) -> str:
    """`shape`'s pattern text, the fields in `groups` (default: all) as capturing groups in
    the order they appear, the others not captured."""
    return shape.format(**{
        name: f"({body})" if groups is None or name in groups else f"(?:{body})"
        for name, body in _FIELDS.items()})


DECODE_FAST = re.compile(batch_shape(DECODE_SHAPE) + r"\Z")
PREFILL_FAST = re.compile(batch_shape(PREFILL_SHAPE) + r"\Z")
GRAPH_KEYS = ("cuda graph", "cpu graph", "npu graph", "musa graph")
_USAGE_KEYS = ("token usage", "full token usage", "swa token usage", "mamba usage",
               "gpu token usage")


@dataclass(frozen=True, slots=True)
class BatchStats:
    kind: Literal["prefill", "decode"]
    timestamp: str | None = None
    ranks: str = ""
    forward_iter: int | None = None
    running_reqs: int | None = None
    queue_reqs: int | None = None
    token_usage: float | None = None
    """`token usage`, or the largest of the hybrid pool usages."""
    num_tokens: int | None = None
    """`#token` (decode): KV tokens in use."""
    new_seq: int | None = None
    new_token: int | None = None
    cached_token: int | None = None
    pending_token: int | None = None
    cuda_graph: bool | None = None
    """None when the line has no graph field (before 0.4): unknown, not off."""
    gen_throughput: float | None = None
    input_throughput: float | None = None
    accept_len: float | None = None
    accept_rate: float | None = None
    retracted_reqs: int | None = None
    prealloc_reqs: int | None = None
    """`#prealloc-req` (a PD decode node): requests sent over from prefill that wait for
    decode KV to be allocated, SGLang's DecodePreallocQueue (disaggregation/decode.py). They
    are not in `#queue-req`, which counts only requests whose KV has arrived."""
    transfer_reqs: int | None = None
    """`#transfer-req` (a PD decode node): requests whose KV is allocated and in transfer."""
    fields: dict[str, str] = field(default_factory=dict)
    """Every `key: value` pair as printed, for fields not promoted above."""


_new_stats = fast_constructor(BatchStats)

DecodeValues = tuple[int, int, float, bool, float, int, float | None]
ScanValues = tuple[bool, int | None, int | None, float | None, bool | None, float | None,
                   float | None]


def is_batch_message(message: str) -> bool:
    return message.startswith(BATCH_PREFIXES)


def parse_batch(
    message: str, *, timestamp: str | None = None, ranks: str = ""
) -> BatchStats | None:
    """Parse the message part of a batch line (after parse_prefix); None when it is not one."""
    found = DECODE_FAST.match(message)
    if found is not None:
        it, run, tok, use, alen, arate, graph, gen, queue = found.groups()
        fields = {"#running-req": run, "#token": tok, "token usage": use}
        if alen is not None:
            fields["accept len"] = alen
            fields["accept rate"] = arate
        fields["cuda graph"] = graph
        fields["gen throughput (token/s)"] = gen
        fields["#queue-req"] = queue
        return _new_stats(
            "decode", timestamp, ranks, None if it is None else int(it), int(run), int(queue),
            float(use), int(tok), None, None, None, None, graph == "True", float(gen), None,
            None if alen is None else float(alen), None if arate is None else float(arate),
            None, None, None, fields,
        )
    found = PREFILL_FAST.match(message)
    if found is not None:
        it, seqs, new, cached, use, run, queue, pending, graph, inp = found.groups()
        fields = {"#new-seq": seqs, "#new-token": new, "#cached-token": cached,
                  "token usage": use, "#running-req": run, "#queue-req": queue,
                  "#pending-token": pending, "cuda graph": graph,
                  "input throughput (token/s)": inp}
        return _new_stats(
            "prefill", timestamp, ranks, None if it is None else int(it), int(run), int(queue),
            float(use), None, int(seqs), int(new), int(cached), int(pending), graph == "True",
            None, float(inp), None, None, None, None, None, fields,
        )
    return parse_batch_general(message, timestamp=timestamp, ranks=ranks)


def decode_values(message: str) -> DecodeValues | None:
    """What the live stats need from a standard `Decode batch` line, without building a
    BatchStats: (running, queued, token usage, cuda graph, gen throughput, #token,
    accept len). None for any other line or variant (use parse_batch)."""
    found = DECODE_FAST.match(message)
    if found is None:
        return None
    _it, run, tok, use, alen, _arate, graph, gen, queue = found.groups()
    return (int(run), int(queue), float(use), graph == "True", float(gen), int(tok),
            None if alen is None else float(alen))


def scan_values(message: str) -> ScanValues | None:
    """What a whole-log summary reads from a batch line's message, without a BatchStats:
    (is decode, running, queued, token usage, cuda graph, throughput (gen for decode, input
    for prefill), accept len). Same values as parse_batch; None when not a batch line."""
    found = DECODE_FAST.match(message)
    if found is not None:
        _it, run, _tok, use, alen, _arate, graph, gen, queue = found.groups()
        return (True, int(run), int(queue), float(use), graph == "True", float(gen),
                None if alen is None else float(alen))
    found = PREFILL_FAST.match(message)
    if found is not None:
        _it, _seqs, _new, _cached, use, run, queue, _pending, graph, inp = found.groups()
        return False, int(run), int(queue), float(use), graph == "True", float(inp), None
    stats = parse_batch_general(message)
    if stats is None:
        return None
    decode = stats.kind == "decode"
    return (decode, stats.running_reqs, stats.queue_reqs, stats.token_usage, stats.cuda_graph,
            stats.gen_throughput if decode else stats.input_throughput, stats.accept_len)


def parse_batch_general(
    message: str, *, timestamp: str | None = None, ranks: str = ""
) -> BatchStats | None:
    """Any batch line variant, read as `key: value` pairs (the fast shapes' fallback)."""
    head = _HEAD.match(message)
    if head is None:
        return None
    pairs: dict[str, str] = {}
    for part in message[head.end():].split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            pairs[key.strip()] = value.strip().rstrip(",")
    graph = next((pairs[k] for k in GRAPH_KEYS if k in pairs), None)
    usages = [u for u in (_float(pairs.get(k)) for k in _USAGE_KEYS) if u is not None]
    return BatchStats(
        kind="prefill" if head.group(1) == "Prefill" else "decode",
        timestamp=timestamp,
        ranks=ranks,
        forward_iter=int(head.group(2)) if head.group(2) else None,
        running_reqs=_int(pairs.get("#running-req")),
        queue_reqs=_int(pairs.get("#queue-req")),
        token_usage=_float(pairs["token usage"]) if "token usage" in pairs else (
            max(usages) if usages else None
        ),
        num_tokens=_int(pairs.get("#token", pairs.get("#full token"))),
        new_seq=_int(pairs.get("#new-seq")),
        new_token=_int(pairs.get("#new-token")),
        cached_token=_int(pairs.get("#cached-token")),
        pending_token=_int(pairs.get("#pending-token")),
        cuda_graph=None if graph is None else graph == "True",
        gen_throughput=_float(pairs.get("gen throughput (token/s)")),
        input_throughput=_float(pairs.get("input throughput (token/s)")),
        accept_len=_float(pairs.get("accept len")),
        accept_rate=_float(pairs.get("accept rate")),
        retracted_reqs=_int(pairs.get("#retracted-req")),
        prealloc_reqs=_int(pairs.get("#prealloc-req")) if head.group(1) == "Decode" else None,
        transfer_reqs=_int(pairs.get("#transfer-req")) if head.group(1) == "Decode" else None,
        fields=pairs,
    )


def cache_hit_rate(stats: BatchStats) -> float | None:
    """0.1-0.3 prefill lines' `cache hit rate: 12.34%` as a fraction (0.1234)."""
    text = stats.fields.get("cache hit rate")
    if text is None:
        return None
    value = _float(text.rstrip("%"))
    return None if value is None else value / 100 if text.endswith("%") else value


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _float(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


# Retraction (KV pool exhausted during decode): `KV cache pool is full. Retract requests.
# #retracted_reqs: 3, #new_tokens_gained: ...` (0.5.23 `srt/managers/scheduler.py:4525-4537`),
# `Decode out of memory happened. #retracted_reqs: 1, ...` (<= 0.4, `scheduler.py`).
KV_POOL_FULL = "KV cache pool is full"
RETRACT_LINE = "KV cache pool is full. Retract requests."
RETRACT_NEEDLES = (KV_POOL_FULL, "Decode out of memory happened")
_RETRACT = re.compile(r"(?:KV cache pool is full\. Retract requests\.|Decode out of memory "
                      r"happened\.) #retracted_reqs: ([0-9]+)")


def retracted_reqs(message: str) -> int | None:
    """How many requests a retraction line pushed back; None when it is not one."""
    found = _RETRACT.search(message)
    return int(found.group(1)) if found else None
