"""Any OpenAI-compatible server: nothing assumed beyond the API itself.

No log grammar, no cache flush, no `/metrics` of a known dialect, no request extensions beyond
those a probe finds accepted: the diagnosis sees the client's record and the GPUs only, and says so.
"""

from __future__ import annotations

from console.engines.base import ServerEngine
from console.engines.transformers_serve import pinned_model

OPENAI = ServerEngine(
    name="openai",
    title="openai-compatible",
    dist_name=None,
    help_format="argparse",
    # uvicorn's lines (FastAPI servers: vLLM, transformers serve, most others)
    ready_lines=("Application startup complete.",),
    # A server that serves one model may say which when asked for another (transformers
    # serve's wording); the client then names that model instead of failing every request.
    model_from_refusal=pinned_model,
)
