"""What one inference engine is, as the rest of Plateau needs to know it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

HelpFormat = Literal["argparse", "click"]

BODY_EXTENSIONS = ("ignore_eos", "continuous_usage_stats")
"""Request-body fields beyond OpenAI's API that Plateau's client sends where accepted:
`ignore_eos` (SGLang's and vLLM's: generate exactly max_tokens) and
`stream_options.continuous_usage_stats` (vLLM's and SGLang's: usage in every chunk)."""


def _no_model(_text: str) -> str | None:
    return None


@dataclass(frozen=True)
class ServerEngine:
    """One engine. Every field is data or a pure function, so the core, the client's worker
    processes and the tests read it the same way."""

    name: str
    """The profile's `engine = "…"` value and what a stored run records."""
    title: str
    """How the console names it (`sglang 0.5.23`, `transformers-serve 5.17.0`)."""
    dist_name: str | None
    """The Python distribution whose version is the server's (read without importing it);
    None: the server says its version over HTTP or not at all."""
    help_format: HelpFormat = "argparse"
    ready_lines: tuple[str, ...] = ()
    """Log lines (substrings) that say the server is ready; HTTP readiness counts too."""
    server_info_paths: tuple[str, ...] = ()
    """GET paths answering a JSON object with the server's args and `version`."""
    flush_path: str | None = None
    """POST path that empties the prefix cache between steps; None: the engine has none."""
    metrics_path: str | None = None
    """Prometheus `/metrics` of the engine's own, None where it has none."""
    body_extensions: tuple[str, ...] = ()
    """Which of BODY_EXTENSIONS the engine is known to accept (the client still drops one a
    server refuses)."""
    native_endpoint: bool = False
    """Has SGLang's `/generate` (token ids in, exact prompt lengths)."""
    model_from_refusal: Callable[[str], str | None] = field(default=_no_model)
    """The model a server is pinned to, read from its refusal of another model's name."""
    log_warning: re.Pattern[str] | None = None
    """A line of its log that is a warning worth an operator's eye."""

    @property
    def has_log_grammar(self) -> bool:
        """Batch lines the diagnosis can read (SGLang's); others give GPU and client evidence
        only."""
        return self.name == "sglang"
