"""Fixed-length random prompts and the request bodies for each endpoint.

`/generate` gets `input_ids`, so the prompt length is exact. The OpenAI endpoints need text:
random words, whose token count the server reports back (`usage.prompt_tokens`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Literal

Endpoint = Literal["generate", "completions", "chat"]

PATHS: dict[str, str] = {
    "generate": "/generate",
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


@dataclass(frozen=True)
class Workload:
    endpoint: Endpoint
    input_len: int
    output_len: int
    ignore_eos: bool = True
    range_ratio: float = 1.0
    model: str = "default"
    seed: int = 0


def _length(rng: random.Random, full: int, ratio: float) -> int:
    if ratio >= 1.0:
        return full
    return rng.randint(max(int(full * ratio), 1), full)


def request_body(workload: Workload, rng: random.Random) -> tuple[bytes, int]:
    """A JSON body for one request and the output length it asks for."""
    in_len = _length(rng, workload.input_len, workload.range_ratio)
    out_len = _length(rng, workload.output_len, workload.range_ratio)
    body: dict[str, object]
    if workload.endpoint == "generate":
        ids = [rng.randrange(_ID_LOW, _ID_HIGH) for _ in range(in_len)]
        body = {
            "input_ids": ids,
            "sampling_params": {
                "max_new_tokens": out_len,
                "ignore_eos": workload.ignore_eos,
                "temperature": 0.0,
            },
            "stream": True,
        }
    else:
        text = " ".join(rng.choice(_WORDS) for _ in range(in_len))
        body = {
            "model": workload.model,
            "max_tokens": out_len,
            "ignore_eos": workload.ignore_eos,
            "temperature": 0.0,
            "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if workload.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
    return json.dumps(body, separators=(",", ":")).encode(), out_len
