"""A strict OpenAI-compatible server for CI, shaped like the real `transformers serve` 5.17 the
device's H200 ran (tests/data/engines/transformers-serve/: its answers, endpoint by endpoint):

- `POST /v1/completions` and `/v1/chat/completions`, streamed one SSE event per token, `usage`
  in the final event only; `stream_options` is ignored with a log line, as there;
- any other top-level field is refused: 422 `{"detail":"Unexpected fields in the request:
  {'ignore_eos'}"}`;
- it serves one model and refuses another name with 400 "Server is pinned to 'M'; requested
  'X'.";
- `GET /health` 200, `GET /v1/models` 500, no `/flush_cache`, `/metrics` or `/server_info`;
- prompts cost ceil(characters / 4) tokens (not one per word), and a request may stop at EOS
  before max_tokens (a hash of its prompt decides), so output lengths vary without ignore_eos.

Timing is a continuous-batching loop: every `--step-ms` each of at most `--max-batch` running
requests gets a token; others wait. Throughput therefore rises with concurrency up to
`--max-batch` and is flat above it: a plateau whose cause is the batch cap, as a real engine's.

    python tests/support/strict_openai_server.py --model M --port P [--max-batch N] [--step-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

ALLOWED = frozenset({"model", "prompt", "messages", "max_tokens", "temperature", "stream",
                     "stream_options", "top_p", "n", "stop", "seed"})
IGNORED = frozenset({"stream_options"})


@dataclass
class Running:
    want: int
    queue: asyncio.Queue[int | None] = field(default_factory=asyncio.Queue)
    made: int = 0


class Engine:
    def __init__(self, max_batch: int, step_s: float, eos_share: float) -> None:
        self.max_batch, self.step_s, self.eos_share = max_batch, step_s, eos_share
        self.waiting: list[Running] = []
        self.running: list[Running] = []
        self.wake = asyncio.Event()

    def submit(self, want: int) -> Running:
        job = Running(want)
        self.waiting.append(job)
        self.wake.set()
        return job

    async def loop(self) -> None:
        while True:
            if not self.running and not self.waiting:
                self.wake.clear()
                await self.wake.wait()
            while self.waiting and len(self.running) < self.max_batch:
                self.running.append(self.waiting.pop(0))
            await asyncio.sleep(self.step_s)
            for job in list(self.running):
                job.made += 1
                job.queue.put_nowait(job.made)
                if job.made >= job.want:
                    job.queue.put_nowait(None)
                    self.running.remove(job)


def say(line: str) -> None:
    print(line, flush=True)


def prompt_tokens(body: dict[str, Any]) -> int:
    text = body.get("prompt")
    if text is None:
        text = "".join(str(m.get("content", "")) for m in body.get("messages") or [])
    return max(1, math.ceil(len(str(text)) / 4))


def output_tokens(body: dict[str, Any], eos_share: float) -> int:
    """max_tokens, or fewer when this prompt 'hits EOS' (a fixed share of prompts)."""
    want = int(body.get("max_tokens") or 16)
    digest = hashlib.sha256(json.dumps(body.get("prompt") or body.get("messages")).encode())
    roll = int.from_bytes(digest.digest()[:4], "big") / 2**32
    return max(1, int(want * roll / eos_share)) if roll < eos_share else want


def make_app(args: argparse.Namespace) -> web.Application:
    engine = Engine(args.max_batch, args.step_ms / 1000.0, args.eos_share)

    async def completions(request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"detail": "invalid JSON"}, status=400)
        unexpected = sorted(set(body) - ALLOWED)
        if unexpected:
            say(f"INFO:     {request.remote} - \"POST {request.path} HTTP/1.1\" 422")
            return web.json_response(
                {"detail": f"Unexpected fields in the request: {set(unexpected)!r}"}, status=422)
        if set(body) & IGNORED:
            say(f"[strict] Ignoring unsupported fields in the request: {set(body) & IGNORED!r}")
        if body.get("model") != args.model:
            return web.json_response({"detail": f"Server is pinned to '{args.model}'; "
                                      f"requested '{body.get('model')}'."}, status=400)
        return await stream(request, body)

    async def stream(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        prompt = prompt_tokens(body)
        want = output_tokens(body, args.eos_share)
        chat = request.path.endswith("/chat/completions")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        job = engine.submit(want)
        rid = uuid.uuid4().hex
        while (made := await job.queue.get()) is not None:
            piece = {"delta": {"content": " tok"}} if chat else {"text": " tok"}
            done = made >= want
            event: dict[str, Any] = {
                "id": rid, "object": "text_completion", "created": int(time.time()),
                "model": args.model,
                "choices": [{"index": 0, **piece,
                             "finish_reason": ("length" if want == body.get("max_tokens")
                                               else "stop") if done else None}]}
            if done:
                event["usage"] = {"prompt_tokens": prompt, "completion_tokens": made,
                                  "total_tokens": prompt + made}
            await resp.write(f"data: {json.dumps(event)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        say(f"INFO:     {request.remote} - \"POST {request.path} HTTP/1.1\" 200 OK")
        return resp

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def models(_request: web.Request) -> web.Response:
        say("ERROR:    Exception in ASGI application")
        return web.Response(status=500, text="Internal Server Error")

    async def start_loop(app: web.Application) -> None:
        app["loop_task"] = asyncio.create_task(engine.loop())
        say("INFO:     Application startup complete.")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.on_startup.append(start_loop)
    return app


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A strict OpenAI-compatible test server.")
    parser.add_argument("--model", required=True, help="the one model served")
    parser.add_argument("--host", default="127.0.0.1", help="listen address")
    parser.add_argument("--port", type=int, default=8000, help="listen port")
    parser.add_argument("--max-batch", type=int, default=8, help="requests decoded at once")
    parser.add_argument("--step-ms", type=float, default=20.0, help="one decode step, ms")
    parser.add_argument("--eos-share", type=float, default=0.25,
                        help="share of prompts that stop at EOS before max_tokens")
    return parser.parse_args(argv)


def main() -> None:
    args = parse_args(sys.argv[1:])
    say(f"[strict] serving {args.model} with at most {args.max_batch} running")
    web.run_app(make_app(args), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
