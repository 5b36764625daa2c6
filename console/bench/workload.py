"""What a step's requests hold, and their bodies for each endpoint.

`/generate` gets `input_ids`, so the prompt length is exact. The OpenAI endpoints need text:
words, whose token count the server reports back (`usage.prompt_tokens`). Equal token ids
(or equal words) in two prompts are a shared prefix a server's prefix cache can reuse.

Kinds (SGLang 0.5.23's python/sglang/benchmark/ is the reference for each):
* random: fixed-length random prompts (datasets/random.py, `--random-range-ratio`).
* shared-prefix: datasets/generated_shared_prefix.py: `groups` system prompts of
  `prefix_len` tokens, `prompts_per_group` questions of `input_len` tokens per group, each
  prompt system + question, all the group x question slots shuffled (not --gsp-ordered).
* multi-turn: conversations of `turns` turns, each turn's prompt the previous prompt, its
  answer and a new question (serving.py `wrap_multi_turn_request_func` appends
  `output.generated_text` as the assistant message), so the context grows turn by turn.
* long-context: inputs from `input_len` up to the model's context length, a geometric ladder
  of lengths, to find where the KV pool gives out.
* sharegpt: lengths from sharegpt_lengths.csv (real ShareGPT first-round prompt/response
  lengths, the file says where from), pruned as datasets/sharegpt.py prunes (< 2 tokens, or
  longer than the context).
* trace: a Mooncake trace (datasets/mooncake.py reads its JSONL: `timestamp` ms,
  `input_length`, `output_length`, `hash_ids`), replayed at its timestamps; each hash id is
  one 512-token block of content (Mooncake's FAST'25 trace block size), so equal hash ids
  are equal prefixes.
"""

from __future__ import annotations

import csv
import json
import math
import random
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from console.config_models import WorkloadKind
from console.engines.base import BODY_EXTENSIONS
from console.errors import UsageError
from console.inputfile import TRACE_FILE, text_lines
from console.sglang import endpoints

Endpoint = Literal["generate", "completions", "chat"]

PATHS: dict[str, str] = {
    "generate": endpoints.GENERATE,
    "completions": "/v1/completions",
    "chat": "/v1/chat/completions",
}

# Token ids well inside any real vocabulary and clear of the special tokens at the start.
_ID_LOW, _ID_HIGH = 1000, 30000
_WORDS = (
    "amber", "basalt", "cobalt", "delta", "ember", "fjord", "granite", "harbor", "indigo",
    "jasper", "kelp", "lumen", "meadow", "nickel", "onyx", "prairie", "quartz", "river",
    "sierra", "tundra", "umber", "valley", "willow", "xenon", "yarrow", "zephyr",
)
TRACE_BLOCK_TOKENS = 512
LONG_CONTEXT_RUNGS = 6
SHAREGPT_FILE = Path(__file__).with_name("sharegpt_lengths.csv")


@dataclass(frozen=True)
class TraceRow:
    timestamp_ms: float
    input_len: int
    output_len: int
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Workload:
    endpoint: Endpoint
    input_len: int
    output_len: int
    ignore_eos: bool = True
    range_ratio: float = 1.0
    model: str = "default"
    seed: int = 0
    kind: WorkloadKind = "random"
    groups: int = 64
    prompts_per_group: int = 16
    prefix_len: int = 2048
    turns: int = 4
    context_len: int = 0  # the server's (long-context, sharegpt pruning); 0: unknown
    trace: tuple[TraceRow, ...] = ()
    extensions: frozenset[str] = frozenset(BODY_EXTENSIONS)
    """Request-body fields beyond OpenAI's API to send (those the server accepts)."""
    tokens_per_word: float = 1.0
    """Tokens one prompt word costs on this server's tokenizer (measured from its usage by
    console.bench.openai_probe), so a text prompt of N tokens has N / this words."""


def _spread(ids: Sequence[int], count: int) -> list[int]:
    """`count` of `ids`, evenly spread: two prompts that share a prefix of ids (and have one
    length) still share a prefix of words when a word costs more than one token."""
    if count >= len(ids):
        return list(ids)
    return [ids[i * len(ids) // count] for i in range(count)]


def words_for(workload: Workload, tokens: int) -> int:
    """Words in a text prompt of `tokens` tokens on the workload's server."""
    return max(1, round(tokens / workload.tokens_per_word))


def _length(rng: random.Random, full: int, ratio: float) -> int:
    if ratio >= 1.0:
        return full
    return rng.randint(max(int(full * ratio), 1), full)


def _ids(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(_ID_LOW, _ID_HIGH) for _ in range(n)]


def _text(ids: Sequence[int]) -> str:
    """Token ids as words (one word, one token on the simulator and most real tokenizers)."""
    return " ".join(_WORDS[i % len(_WORDS)] for i in ids)


def sample_text(words: int) -> str:
    """A prompt of `words` words as the workloads write them (for probes)."""
    return _text(range(words))


def body_bytes(workload: Workload, prompt: Sequence[int] | str | list[dict[str, str]],
               out_len: int) -> bytes:
    """The JSON request: ids for /generate, text (or messages) for the OpenAI endpoints."""
    body: dict[str, object]
    if isinstance(prompt, IdsText):
        params = json.dumps({"max_new_tokens": out_len, "ignore_eos": workload.ignore_eos,
                             "temperature": 0.0}, separators=(",", ":"))
        return f'{{"input_ids":[{prompt}],"sampling_params":{params},"stream":true}}'.encode()
    if workload.endpoint == "generate":  # SGLang's own API: its extensions are native there
        body = {
            "input_ids": list(prompt) if not isinstance(prompt, str) else prompt,
            "sampling_params": {
                "max_new_tokens": out_len,
                "ignore_eos": workload.ignore_eos,
                "temperature": 0.0,
            },
            "stream": True,
        }
    else:
        body = openai_body(workload, out_len)
        if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
            body["messages"] = prompt
        else:
            text = prompt if isinstance(prompt, str) else _text(
                _spread(prompt, words_for(workload, len(prompt))))  # type: ignore[arg-type]
            if workload.endpoint == "chat":
                body["messages"] = [{"role": "user", "content": text}]
            else:
                body["prompt"] = text
    return json.dumps(body, separators=(",", ":")).encode()


def openai_body(workload: Workload, out_len: int) -> dict[str, object]:
    """An OpenAI request's fields but the prompt: the standard ones, and the extensions the
    server takes (a strict server refuses an unknown field with 422)."""
    usage: dict[str, bool] = {"include_usage": True}
    if "continuous_usage_stats" in workload.extensions:
        usage["continuous_usage_stats"] = True
    body: dict[str, object] = {"model": workload.model, "max_tokens": out_len,
                               "temperature": 0.0, "stream": True, "stream_options": usage}
    if "ignore_eos" in workload.extensions:
        body["ignore_eos"] = workload.ignore_eos
    return body


def request_body(workload: Workload, rng: random.Random) -> tuple[bytes, int]:
    """A random-kind JSON body for one request and the output length it asks for."""
    in_len = _length(rng, workload.input_len, workload.range_ratio)
    out_len = _length(rng, workload.output_len, workload.range_ratio)
    if workload.endpoint == "generate":
        return body_bytes(workload, _ids(rng, in_len), out_len), out_len
    text = " ".join(rng.choice(_WORDS) for _ in range(words_for(workload, in_len)))
    return body_bytes(workload, text, out_len), out_len


# ----------------------------------------------------------------------------- conversations


@dataclass(eq=False)
class Conversation:
    """One multi-turn chat: its history so far and how many turns are left."""

    turns_left: int
    # /generate: prompt and answers as the JSON text of their ids ("12,34"): a history is
    # kept as compactly as a pre-built body, and a turn's body is one concatenation.
    ids: str = ""
    text: str = ""  # /v1/completions
    messages: list[dict[str, str]] = field(default_factory=list)  # /v1/chat/completions

    def ask(self, endpoint: str, question: list[int], words: int | None = None) -> Any:
        """Append the next question (as `words` words on a text endpoint); returns the
        prompt to send."""
        self.turns_left -= 1
        if endpoint == "generate":
            self.ids = _join(self.ids, ",".join(map(str, question)))
            return IdsText(self.ids)
        question = _spread(question, words) if words else question
        if endpoint == "chat":
            self.messages.append({"role": "user", "content": _text(question)})
            return self.messages
        self.text = f"{self.text} {_text(question)}".lstrip()
        return self.text

    def answered(self, endpoint: str, answer: list[Any]) -> None:
        if endpoint == "generate":
            self.ids = _join(self.ids, ",".join(map(str, answer)))
        elif endpoint == "chat":
            self.messages.append({"role": "assistant", "content": "".join(answer)})
        else:
            self.text += "".join(answer)


class IdsText(str):
    """Token ids already written as JSON list items ("12,34")."""


def _join(head: str, tail: str) -> str:
    return f"{head},{tail}" if head and tail else head or tail


@dataclass
class Prompt:
    body: bytes
    output_len: int
    conversation: Conversation | None = None


# ----------------------------------------------------------------------------- sources


@cache
def sharegpt_lengths() -> tuple[tuple[int, int], ...]:
    with SHAREGPT_FILE.open() as f:
        rows = csv.reader(line for line in f if not line.startswith("#"))
        next(rows)
        return tuple((int(a), int(b)) for a, b in rows)


def load_trace(path: str | Path) -> tuple[TraceRow, ...]:
    """A Mooncake-format JSONL trace (bench_serving's `--dataset-name mooncake` file), read
    within a trace's limits (console/inputfile.py); any problem is one ValueError line."""
    rows = []
    try:
        lines = text_lines(str(path), str(path), TRACE_FILE)
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rows.append(_trace_row(json.loads(line)))
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
                raise ValueError(f"{path}:{number}: not a Mooncake trace line "
                                 f"({str(exc)[:200]})") from None
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    if not rows:
        raise ValueError(f"{path}: no requests in the trace")
    return tuple(sorted(rows, key=lambda r: r.timestamp_ms))


MAX_TRACE_TOKENS = 1 << 20  # a row asks for a prompt this long at most (it is built in memory)


def _trace_row(item: Any) -> TraceRow:
    row = TraceRow(float(item["timestamp"]), int(item["input_length"]),
                   int(item.get("output_length", 256)),
                   tuple(int(h) for h in item.get("hash_ids") or ()))
    if not math.isfinite(row.timestamp_ms) or row.timestamp_ms < 0:
        raise ValueError("timestamp must be a finite number of ms >= 0")
    if not (1 <= row.input_len <= MAX_TRACE_TOKENS and 1 <= row.output_len <= MAX_TRACE_TOKENS):
        raise ValueError(f"input_length and output_length must be 1..{MAX_TRACE_TOKENS:,}")
    return row


def trace_offsets(rows: Sequence[TraceRow]) -> list[float]:
    """Arrival seconds after the first request (get_mooncake_request_over_time)."""
    first = rows[0].timestamp_ms if rows else 0.0
    return [(r.timestamp_ms - first) / 1000.0 for r in rows]


def _block(hash_id: int) -> list[int]:
    return _ids(random.Random(hash_id * 2654435761 + 17), TRACE_BLOCK_TOKENS)


def _long_context_rungs(workload: Workload) -> list[int]:
    top = max(workload.input_len, (workload.context_len or 8 * workload.input_len)
              - workload.output_len - 1)
    low = min(workload.input_len, top)
    step = (top / low) ** (1 / max(1, LONG_CONTEXT_RUNGS - 1))
    return sorted({int(low * step**k) for k in range(LONG_CONTEXT_RUNGS - 1)} | {top})


class PromptSource:
    """Every request a worker sends, in order. A worker is `part` of `parts`: shared-prefix
    slots and trace rows are dealt round-robin, so the workers together send the sequence
    one client would. Multi-turn prompts depend on answers: `answered` takes them back."""

    def __init__(self, workload: Workload, rng: random.Random, part: int = 0,
                 parts: int = 1) -> None:
        self.workload = workload
        self.rng = rng
        self.part, self.parts = part, parts
        self.count = 0
        self.ready: deque[Conversation] = deque()  # conversations waiting for their next turn
        self._slots: Iterator[int] = iter(())
        self._round = 0
        self._rungs = _long_context_rungs(workload) if workload.kind == "long-context" else []
        if workload.kind == "sharegpt":
            ctx = workload.context_len
            self._pairs = [(a, b) for a, b in sharegpt_lengths()
                           if a >= 2 and b >= 2 and not (ctx and a + b > ctx)]

    @property
    def keeps_answers(self) -> bool:
        return self.workload.kind == "multi-turn"

    @property
    def prebuildable(self) -> bool:
        """Bodies that do not depend on earlier answers can be built before the step."""
        return not self.keeps_answers

    def next(self) -> Prompt:
        kind = self.workload.kind
        self.count += 1
        if kind == "shared-prefix":
            return self._shared_prefix()
        if kind == "multi-turn":
            return self._multi_turn()
        if kind == "trace":
            return self._trace()
        if kind == "random":
            body, out = request_body(self.workload, self.rng)
            return Prompt(body, out)
        if kind == "long-context":
            n = self._rungs[(self.count - 1 + self.part) % len(self._rungs)]
            return self._fixed(n, self.workload.output_len)
        a, b = self._pairs[self.rng.randrange(len(self._pairs))]
        return self._fixed(a, b)

    def answered(self, prompt: Prompt, answer: list[Any] | None) -> None:
        conv = prompt.conversation
        if conv is None or answer is None:  # a failed turn ends its conversation
            return
        conv.answered(self.workload.endpoint, answer or [])
        if conv.turns_left > 0:
            self.ready.append(conv)

    def _fixed(self, in_len: int, out_len: int) -> Prompt:
        return Prompt(body_bytes(self.workload, _ids(self.rng, in_len), out_len), out_len)

    def _shared_prefix(self) -> Prompt:
        w = self.workload
        slot = next(self._slots, None)
        if slot is None:  # every group x question slot used: a fresh shuffle
            self._slots = iter(shared_prefix_slots(w, self._round)[self.part::self.parts])
            self._round += 1
            slot = next(self._slots)
        group = slot // w.prompts_per_group
        question = _ids(self.rng, _length(self.rng, w.input_len, w.range_ratio))
        out = _length(self.rng, w.output_len, w.range_ratio)
        return Prompt(body_bytes(w, group_prefix(w, group) + question, out), out)

    def _multi_turn(self) -> Prompt:
        w = self.workload
        conv = self.ready.popleft() if self.ready else Conversation(turns_left=w.turns)
        question = _ids(self.rng, _length(self.rng, w.input_len, w.range_ratio))
        out = _length(self.rng, w.output_len, w.range_ratio)
        prompt = conv.ask(w.endpoint, question, words_for(w, len(question)))
        return Prompt(body_bytes(w, prompt, out), out, conv)

    def _trace(self) -> Prompt:
        rows = self.workload.trace
        row = rows[(self.part + (self.count - 1) * self.parts) % len(rows)]
        ids: list[int] = []
        for hash_id in row.hash_ids:
            if len(ids) >= row.input_len:
                break
            ids += _block(hash_id)
        ids = ids[: row.input_len] + _ids(self.rng, max(0, row.input_len - len(ids)))
        return Prompt(body_bytes(self.workload, ids, row.output_len), row.output_len)


@cache
def _group_prefix(seed: int, group: int, length: int) -> tuple[int, ...]:
    return tuple(_ids(random.Random(seed * 1_000_003 + group), length))


def group_prefix(workload: Workload, group: int) -> list[int]:
    """Group `group`'s system prompt: the same ids in every worker."""
    return list(_group_prefix(workload.seed, group, workload.prefix_len))


def shared_prefix_slots(workload: Workload, round_: int = 0) -> list[int]:
    """The groups x prompts_per_group slots in the order one client sends them."""
    slots = list(range(workload.groups * workload.prompts_per_group))
    random.Random(workload.seed * 7919 + round_).shuffle(slots)
    return slots


def expected_cached_tokens(workload: Workload, prompts: int) -> int:
    """Prompt tokens a prefix cache with room for every group could supply to `prompts`
    shared-prefix requests: each group's system prompt is computed once, by its first request
    (the cache is flushed before the step), and reused by every later one."""
    slots = [s for r in range(prompts // max(1, len(shared_prefix_slots(workload))) + 1)
             for s in shared_prefix_slots(workload, r)][:prompts]
    groups_seen = len({s // workload.prompts_per_group for s in slots})
    return (len(slots) - groups_seen) * workload.prefix_len
