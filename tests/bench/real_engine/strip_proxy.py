"""A loopback relay that drops request fields a strict server refuses, for bench_serving.

SGLang's bench_serving (0.5.23, `--backend vllm|sglang-oai`) always sends `best_of` and
`ignore_eos` (serving.py async_request_openai_completions), and `transformers serve` refuses
any unknown field with 422, so bench_serving cannot measure it as it is. This relay keeps only
OpenAI's fields and streams the answer back byte for byte. bench_serving also waits for
`GET /v1/models` to answer 200, which transformers serve 500s without an HF cache: the relay
answers it with the one model it is told. For a fair comparison Plateau's
client is sent through the same relay (both pay the same extra hop).

    python strip_proxy.py LISTEN_PORT UPSTREAM_URL MODEL
"""

from __future__ import annotations

import json
import sys

import aiohttp
from aiohttp import web

KEEP = frozenset({"model", "prompt", "messages", "max_tokens", "temperature", "stream",
                  "stream_options", "top_p", "n", "stop", "seed"})


def make_app(upstream: str, model: str) -> web.Application:
    session: dict[str, aiohttp.ClientSession] = {}

    async def start(_app: web.Application) -> None:
        session["s"] = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=None))

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list",
                                  "data": [{"id": model, "object": "model"}]})

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.method == "POST" and body:
            data = json.loads(body)
            body = json.dumps({k: v for k, v in data.items() if k in KEEP}).encode()
        async with session["s"].request(request.method, upstream + request.path_qs, data=body,
                                        headers={"Content-Type": "application/json"}) as up:
            resp = web.StreamResponse(status=up.status, headers={
                "Content-Type": up.headers.get("Content-Type", "application/json")})
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    app = web.Application()
    app.on_startup.append(start)
    app.router.add_get("/v1/models", models)
    app.router.add_route("*", "/{tail:.*}", relay)
    return app


if __name__ == "__main__":
    web.run_app(make_app(sys.argv[2].rstrip("/"), sys.argv[3]), host="127.0.0.1",
                port=int(sys.argv[1]), print=None)
