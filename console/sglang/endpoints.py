"""SGLang's own HTTP paths (beyond OpenAI's `/v1/...`), as 0.5.23 `srt/entrypoints/http_server.py`
serves them. The engine seam (console/engines/sglang.py) and everything else read them here."""

from __future__ import annotations

GENERATE = "/generate"
"""Native generation: token ids in, exact prompt lengths."""
FLUSH_CACHE = "/flush_cache"
"""POST empties the radix (prefix) cache."""
SERVER_INFO = "/server_info"
GET_SERVER_INFO = "/get_server_info"
"""The deprecated spelling of SERVER_INFO that older releases answer."""
SERVER_INFO_PATHS = (SERVER_INFO, GET_SERVER_INFO)
MODEL_INFO = "/model_info"
HEALTH_GENERATE = "/health_generate"
