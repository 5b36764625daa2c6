"""What a real OpenAI-compatible server accepts: one request per body variant, answers saved.

    python tests/bench/real_engine/probe_server.py URL OUT.json [MODEL ...]
"""

from __future__ import annotations

import json
import sys

import httpx

VARIANTS: dict[str, dict[str, object]] = {
    "plain": {},
    "ignore_eos": {"ignore_eos": True},
    "usage": {"stream_options": {"include_usage": True}},
    "continuous_usage": {"stream_options": {"include_usage": True,
                                            "continuous_usage_stats": True}},
}


MODELS = sys.argv[3:] or ["m"]


def _ask(client: httpx.Client, method: str, url: str,
         body: dict[str, object] | None = None) -> dict[str, object]:
    try:
        resp = client.request(method, url, json=body)
    except httpx.HTTPError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"status": resp.status_code, "body": resp.text[:3000],
            "headers": dict(resp.headers)}


def main() -> None:
    url, out = sys.argv[1].rstrip("/"), sys.argv[2]
    found: dict[str, object] = {}
    with httpx.Client(timeout=60) as client:
        for path in ("/health", "/v1/models", "/flush_cache", "/metrics", "/server_info",
                     "/get_server_info", "/version", "/openapi.json"):
            method = "POST" if path == "/flush_cache" else "GET"
            found[path] = _ask(client, method, url + path)
        for model in MODELS:
            for name, extra in VARIANTS.items():
                body = {"model": model, "prompt": "amber basalt cobalt delta", "max_tokens": 8,
                        "temperature": 0.0, "stream": True, **extra}
                found[f"{model}:stream:{name}"] = _ask(client, "POST", url + "/v1/completions",
                                                       body)
            body = {"model": model, "prompt": "amber basalt", "max_tokens": 8,
                    "temperature": 0.0}
            found[f"{model}:nonstream"] = _ask(client, "POST", url + "/v1/completions", body)
    with open(out, "w") as fh:
        json.dump(found, fh, indent=1)


if __name__ == "__main__":
    main()
