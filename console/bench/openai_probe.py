"""Fitting the client to an OpenAI-compatible server before the first step.

A real server is not Plateau's simulator: `transformers serve` refuses `ignore_eos` with 422
(an unknown field), is pinned to one model and 400s any other name, has no `/v1/models` that
works without an HF cache, and its tokenizer is not one token per word. SGLang's
bench_serving copes by flags the operator must know (`--backend`, `--disable-ignore-eos`);
Plateau asks the server once, with a small request, and adapts:

- a 4xx whose text names a field we sent: that extension is dropped (and said: without
  `ignore_eos` outputs may stop at EOS, so their lengths vary; output tokens are counted from
  the server's `usage`);
- a refusal naming the model the server is pinned to: that model is used;
- two prompts of different lengths: the server's `usage.prompt_tokens` gives the tokens one
  prompt word costs, so a step's prompts have the asked token length on this tokenizer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import httpx

from console.bench.server_probe import describe_http_error
from console.bench.workload import PATHS, Workload, body_bytes, sample_text
from console.engines import ServerEngine

PROBE_TIMEOUT_S = 120.0
MAX_TRIES = 6
CALIBRATION_WORDS = (32, 160)
# Tokens a workload word can cost on a real tokenizer (one whole-word token to a word spelled
# out byte by byte); outside this the server's usage is not believed.
MIN_PER_WORD, MAX_PER_WORD = 0.25, 12.0
_QUOTED = re.compile(r"'([A-Za-z_]{1,64})'|\"([A-Za-z_]{1,64})\"|\b([a-z]+(?:_[a-z]+)+)\b")


class ProbeError(Exception):
    """The server refused every form of a small request (said with its answer)."""


@dataclass(frozen=True)
class ServerFit:
    workload: Workload
    notes: tuple[str, ...] = ()


def refused_extension(text: str, sent: frozenset[str]) -> str | None:
    """The extension a refusal names (`Unexpected fields in the request: {'ignore_eos'}`,
    pydantic's `extra_forbidden` at `ignore_eos`, ...), or None."""
    for match in _QUOTED.finditer(text):
        word = next(g for g in match.groups() if g)
        if word in sent:
            return word
    return None


def _usage_prompt_tokens(body: str) -> int | None:
    """The last `usage.prompt_tokens` in a streamed (or plain JSON) answer."""
    found = None
    for line in body.splitlines():
        payload = line[5:].strip() if line.startswith("data:") else line.strip()
        if not payload.startswith("{"):
            continue
        try:
            usage = json.loads(payload).get("usage") or {}
        except (ValueError, AttributeError):
            continue
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            found = usage["prompt_tokens"]
    return found


async def _ask(client: httpx.AsyncClient, url: str, workload: Workload,
               words: int) -> httpx.Response:
    body = body_bytes(workload, sample_text(words), 2)
    return await client.post(url, content=body, headers={"Content-Type": "application/json"})


def _adapt(workload: Workload, engine: ServerEngine, resp: httpx.Response,
           notes: list[str]) -> Workload:
    """The workload changed to meet one refusal, or ProbeError when nothing we sent is named."""
    text = resp.text[:2000]
    dropped = refused_extension(text, workload.extensions)
    if dropped is not None:
        notes.append(_dropped_note(dropped, resp.status_code))
        return replace(workload, extensions=workload.extensions - {dropped})
    pinned = engine.model_from_refusal(text)
    if pinned and pinned != workload.model:
        notes.append(f"the server serves only model {pinned!r}: requests name it")
        return replace(workload, model=pinned)
    raise ProbeError(f"the server refused a 2-token request: HTTP {resp.status_code}: "
                     f"{text[:200].strip()}")


def _dropped_note(field: str, status: int) -> str:
    if field == "ignore_eos":
        return (f"the server refuses ignore_eos (HTTP {status}): a request may stop at EOS "
                "before its output length, so output lengths vary; output tokens are counted "
                "from the server's usage")
    return f"the server refuses {field} (HTTP {status}): not sent"


async def fit_client(base_url: str, workload: Workload, engine: ServerEngine,
                     headers: Sequence[tuple[str, str]] = ()) -> ServerFit:
    """`workload` as this server takes it (extensions, model, tokens per word), with what
    changed said in notes. Only for the OpenAI endpoints: SGLang's /generate takes token ids."""
    url = base_url.rstrip("/") + PATHS[workload.endpoint]
    notes: list[str] = []
    async with httpx.AsyncClient(timeout=PROBE_TIMEOUT_S, headers=dict(headers)) as client:
        counts: list[int | None] = []
        for words in CALIBRATION_WORDS:
            for _ in range(MAX_TRIES):
                try:
                    resp = await _ask(client, url, workload, words)
                except httpx.HTTPError as exc:
                    raise ProbeError(f"probe request failed: {describe_http_error(exc)}") from None
                if resp.status_code < 400:
                    counts.append(_usage_prompt_tokens(resp.text))
                    break
                if resp.status_code >= 500:
                    raise ProbeError(f"the server failed a 2-token request: HTTP "
                                     f"{resp.status_code}: {resp.text[:200].strip()}")
                workload = _adapt(workload, engine, resp, notes)
            else:
                raise ProbeError("the server kept refusing a 2-token request")
    return ServerFit(_calibrated(workload, counts, notes), tuple(notes))


def _calibrated(workload: Workload, counts: list[int | None], notes: list[str]) -> Workload:
    short, long = counts if len(counts) == 2 else (None, None)
    low, high = CALIBRATION_WORDS
    if short is None or long is None or long <= short:
        notes.append("the server reports no prompt usage: prompt lengths are in words")
        return workload
    per_word = (long - short) / (high - low)
    if not MIN_PER_WORD <= per_word <= MAX_PER_WORD:  # the server's usage is untrusted
        notes.append(f"the server's usage says a prompt word is {per_word:.3g} tokens, which "
                     "no tokenizer does: prompt lengths are in words")
        return workload
    if abs(per_word - 1.0) >= 0.02:
        notes.append(f"a prompt word is {per_word:.2f} tokens on this server's tokenizer: "
                     "prompts are sized to match")
    return replace(workload, tokens_per_word=per_word)
