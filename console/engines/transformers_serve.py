"""Hugging Face `transformers serve` (5.x) behind the seam.

Every fact here was read off the real server on the device's H200 (tests/data/engines/
transformers-serve/: its `--help`, its log and each endpoint's answer):
- click `--help` (`--x / --no-x` booleans), the model positional (`transformers serve MODEL`);
- ready once uvicorn says so (`Application startup complete.`) and `GET /health` answers 200;
- no `/flush_cache`, `/metrics`, `/server_info` (404); `/v1/models` 500s when there is no HF
  cache; the version is the `transformers` distribution's;
- `ignore_eos` refused with 422 ("Unexpected fields in the request: {'ignore_eos'}"),
  `stream_options` ignored with a log line, usage in the final stream event;
- a request naming another model is refused with 400: "Server is pinned to '/tmp/model';
  requested 'm'." — the client takes the pinned name from that.
"""

from __future__ import annotations

import re

from console.engines.base import ServerEngine

_PINNED = re.compile(r"pinned to '([^'\n]{1,512})'")


def pinned_model(text: str) -> str | None:
    found = _PINNED.search(text)
    return found.group(1) if found else None


TRANSFORMERS_SERVE = ServerEngine(
    name="transformers-serve",
    title="transformers-serve",
    dist_name="transformers",
    help_format="click",
    ready_lines=("Application startup complete.",),
    model_from_refusal=pinned_model,
    log_warning=re.compile(r"^(?:WARNING|ERROR):|Ignoring unsupported fields|Traceback"),
)
