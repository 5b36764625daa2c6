"""Is the server still there? Said in words a person can act on."""

from __future__ import annotations

import httpx

from console.engines import ENGINES, ServerEngine
from console.engines.openai import OPENAI

GONE_PROBE_TIMEOUT_S = 10.0


def describe_http_error(exc: BaseException) -> str:
    """`ConnectError: [Errno 111] Connection refused`; never a bare `ReadError:` (httpx leaves
    the message of a dropped connection empty)."""
    detail = str(exc).strip()
    if not detail and exc.__cause__ is not None:
        detail = str(exc.__cause__).strip() or type(exc.__cause__).__name__
    if not detail:
        detail = {
            "ReadError": "the connection was closed",
            "RemoteProtocolError": "the server closed the connection without a reply",
            "WriteError": "the connection was closed while sending",
        }.get(type(exc).__name__, "no detail")
    return f"{type(exc).__name__}: {detail}"


async def server_gone(base_url: str) -> str | None:
    """Why the server looks gone (nothing accepts connections, connections drop, no answer
    within GONE_PROBE_TIMEOUT_S), or None when it answers at all (any HTTP status: a 503 from
    /health is a live server saying it is unhealthy)."""
    try:
        async with httpx.AsyncClient(timeout=GONE_PROBE_TIMEOUT_S) as client:
            await client.get(base_url.rstrip("/") + "/health")
    except httpx.HTTPError as exc:
        return describe_http_error(exc)
    return None


async def detect_engine(base_url: str, headers: tuple[tuple[str, str], ...] = ()
                        ) -> ServerEngine:
    """The engine behind a bare URL: one whose server-info path answers a JSON object with a
    version (SGLang's /server_info); otherwise any OpenAI-compatible server."""
    async with httpx.AsyncClient(timeout=GONE_PROBE_TIMEOUT_S, headers=dict(headers)) as client:
        for engine in ENGINES.values():
            for path in engine.server_info_paths:
                try:
                    resp = await client.get(base_url.rstrip("/") + path)
                    info = resp.json() if resp.status_code == 200 else None
                except (httpx.HTTPError, ValueError):
                    continue
                if isinstance(info, dict) and "version" in info:
                    return engine
    return OPENAI
