"""SGLang behind the seam: its facts live in console/sglang/, read from there."""

from __future__ import annotations

import re

from console.engines.base import BODY_EXTENSIONS, ServerEngine
from console.sglang import endpoints
from console.sglang.startup import READY as READY_LINE

SGLANG = ServerEngine(
    name="sglang",
    title="sglang",
    dist_name="sglang",
    help_format="argparse",
    ready_lines=(READY_LINE,),
    # /get_server_info is the pre-0.4.x spelling, still served (deprecated) by 0.5.23.
    server_info_paths=endpoints.SERVER_INFO_PATHS,
    flush_path=endpoints.FLUSH_CACHE,
    metrics_path="/metrics",
    body_extensions=BODY_EXTENSIONS,
    native_endpoint=True,
    log_warning=re.compile(r"\bWARNING\b"),
)
