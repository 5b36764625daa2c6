"""Request parsing and response shapes for the native and OpenAI-compatible endpoints.

Shapes follow docs/sglang.md §3.7 (native `/generate`) and §3.8 (OpenAI chunks). Streaming chunks
are assembled from pre-escaped string pieces: the token text is plain ASCII words, so building
the JSON by hand is exact and far cheaper than serialising a dict per token per request.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from console.sim.engine import Req
from console.sim.text_tokens import text_ids
from console.sim.tokens import json_pieces, pieces

DEFAULT_MAX_NEW_TOKENS = 128  # SGLang's SamplingParams default
DONE = b"data: [DONE]\n\n"


class BadRequest(Exception):
    pass


def new_rid() -> str:
    return uuid.uuid4().hex


def prompt_ids_native(body: dict[str, Any]) -> list[int]:
    ids = body.get("input_ids")
    if ids is not None:
        if isinstance(ids, list) and ids and isinstance(ids[0], list):
            raise BadRequest("batched input_ids are not supported by the simulator")
        return _token_ids(ids, "input_ids")
    text = body.get("text")
    if isinstance(text, list):
        raise BadRequest("batched text is not supported by the simulator")
    if not isinstance(text, str):
        raise BadRequest("Either text, input_ids or input_embeds should be provided.")
    return text_ids(text)


def _token_ids(ids: Any, name: str) -> list[int]:
    """Token ids as the prefix cache keys them: ints inside any vocabulary (a real server
    rejects the rest too, on its embedding lookup)."""
    if not isinstance(ids, list) or not all(
            type(i) is int and 0 <= i < 1 << 31 for i in ids):
        raise BadRequest(f"{name} must be a list of token ids (non-negative ints)")
    return ids


def prompt_ids_openai(prompt: Any) -> list[int]:
    if isinstance(prompt, str):
        return text_ids(prompt)
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
        return _token_ids(prompt, "prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        return prompt_ids_openai(prompt[0])
    raise BadRequest("prompt must be a string, a list of one string, or a list of token ids")


# The chat template, ChatML-like: <s>, then per message <|im_start|> role \n content
# <|im_end|> (4 + content tokens), then the generation prompt <|im_start|> assistant \n (3).
# The generation prompt is the assistant message's own header, so a next turn that carries
# the answer shares every token of this turn's prompt and output with it (prefix-cache hits).
_IM_START, _IM_END, _NL = -1, -2, -3
_ROLES = {"system": -10, "user": -11, "assistant": -12}


def prompt_ids_chat(messages: Any) -> list[int]:
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    ids = [1]  # BOS
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        role = message.get("role") if isinstance(message, dict) else None
        if isinstance(content, list):  # multi-part content: count the text parts
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        ids += (_IM_START, _ROLES.get(role, -13) if isinstance(role, str) else -13, _NL)
        if isinstance(content, str):
            ids += text_ids(content)
        ids.append(_IM_END)
    ids += (_IM_START, _ROLES["assistant"], _NL)
    return ids


def text_of(ids: list[int], start: int = 0) -> str:
    table = pieces()
    return "".join(table[i] for i in ids[start:])


def json_text_of(ids: list[int], start: int = 0) -> str:
    table = json_pieces()
    return "".join(table[i] for i in ids[start:])


def meta_info(req: Req, final: bool) -> str:
    fr = "null" if not final or req.finish_reason is None else _compact(req.finish_reason)
    out = (
        f'{{"id":"{req.rid}","finish_reason":{fr},"prompt_tokens":{req.input_len},'
        f'"weight_version":"default","num_retractions":{req.num_retractions},'
        f'"reasoning_tokens":0,"completion_tokens":{len(req.output_ids)},"cached_tokens":{req.cached}'
    )
    if final:
        end = req.finish_time or time.monotonic()
        out += f',"e2e_latency":{end - req.created:.6f}'
    return out + "}"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def native_result(req: Req) -> dict[str, Any]:
    return {
        "text": text_of(req.output_ids),
        "output_ids": list(req.output_ids),
        "meta_info": json.loads(meta_info(req, final=True)),
    }


def openai_finish(req: Req) -> tuple[str | None, int | str | None]:
    reason = req.finish_reason or {}
    kind = reason.get("type")
    if kind == "length":
        return "length", None
    if kind == "stop":
        return "stop", reason.get("matched")
    if kind == "abort":
        return "abort", None
    return None, None


def usage(req: Req) -> dict[str, Any]:
    completion = len(req.output_ids)
    return {
        "prompt_tokens": req.input_len,
        "total_tokens": req.input_len + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }


def completion_body(req: Req, model: str, created: int, rid: str) -> dict[str, Any]:
    reason, matched = openai_finish(req)
    return {
        "id": rid,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "text": text_of(req.output_ids), "logprobs": None,
                     "finish_reason": reason, "matched_stop": matched}],
        "usage": usage(req),
    }


def chat_body(req: Req, model: str, created: int, rid: str) -> dict[str, Any]:
    reason, matched = openai_finish(req)
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0,
                     "message": {"role": "assistant", "content": text_of(req.output_ids),
                                 "reasoning_content": None, "tool_calls": None},
                     "logprobs": None, "finish_reason": reason, "matched_stop": matched}],
        "usage": usage(req),
    }


def sse(payload: str) -> bytes:
    return b"data: " + payload.encode() + b"\n\n"


def error_event(message: str, code: int = 400) -> bytes:
    return sse(json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                     "code": code, "retryable": False}}))
