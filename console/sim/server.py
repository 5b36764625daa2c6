"""The HTTP side of the simulated SGLang server (aiohttp.web).

Routes and shapes follow docs/sglang.md §3. Streaming handlers wait on their request's waiter and
write one SSE event per wakeup with everything new since the last write (cumulative text for
the native API unless --incremental-streaming-output, deltas for OpenAI).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Handler

from console.sglang.endpoints import (
    FLUSH_CACHE,
    GENERATE,
    GET_SERVER_INFO,
    HEALTH_GENERATE,
    MODEL_INFO,
    SERVER_INFO_PATHS,
)
from console.sim import protocol as P
from console.sim import shapes
from console.sim.config import SimConfig, rank_prefix
from console.sim.engine import BaseEngine, Req
from console.sim.lateness import Lateness
from console.sim.logs import SimLog
from console.sim.procs import ProcGroup
from console.sim.streams import NativeStream
from console.sim.tokens import EOS_TOKEN_ID

VERSION = "0.5.23"  # the default; /server_info reports the version the sim plays
FLUSH_OK = (
    "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
    "waiting requests, the operation will not be performed.)\n"
)


@dataclass
class SimState:
    cfg: SimConfig
    log: SimLog
    engine: BaseEngine
    status: str = "starting"  # starting | ready | draining
    startup_time: dict[str, Any] = field(default_factory=dict)
    started_unix: float = field(default_factory=time.time)
    first_request_seen: asyncio.Event = field(default_factory=asyncio.Event)
    metrics: Any = None  # console.sim.metrics.Metrics when --enable-metrics
    flush_pending: bool = False  # a /flush_cache?timeout=S is waiting for idle
    lateness: Lateness | None = None  # ideal mode: the sim's own write-vs-due lateness
    procs: ProcGroup | None = None  # --sim-ideal-procs > 1: the sibling processes


STATE: web.AppKey[SimState] = web.AppKey("sim_state", SimState)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data).encode(), status=status,
                        content_type="application/json")


def _error(message: str, status: int = 400) -> web.Response:
    return _json({"error": {"message": message}}, status)


@web.middleware
async def access_log(request: web.Request, handler: Handler) -> web.StreamResponse:
    state = request.app[STATE]
    if state.metrics is not None:
        state.metrics.http_request(request.path, request.method)
    response: web.StreamResponse = await handler(request)
    peer = request.transport.get_extra_info("peername") if request.transport else None
    client = f"{peer[0]}:{peer[1]}" if peer else "-"
    path = request.path_qs
    try:
        phrase = HTTPStatus(response.status).phrase
    except ValueError:
        phrase = ""
    state.log.access(client, request.method, path, response.status, phrase)
    if state.metrics is not None:
        state.metrics.http_response(request.path, response.status)
    return response


# SGLang's auth (srt/utils/auth.py): probes are always open; /flush_cache is ADMIN_OPTIONAL
# (the admin key when one is set, else the API key); every other route wants the API key.
_OPEN_PREFIXES = ("/health", "/ready", "/metrics")
_ADMIN_OPTIONAL = frozenset({FLUSH_CACHE})


def _bearer_ok(header: str | None, expected: str) -> bool:
    if not header:
        return False
    scheme, _, token = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token, expected)


@web.middleware
async def api_key_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    sa = request.app[STATE].cfg.server_args
    api_key, admin_key = sa.get("api_key"), sa.get("admin_api_key")
    path = request.path
    if request.method == "OPTIONS" or path.startswith(_OPEN_PREFIXES):
        return await handler(request)
    expected = (admin_key or api_key) if path in _ADMIN_OPTIONAL else api_key
    if expected and not _bearer_ok(request.headers.get("Authorization"), expected):
        return _json({"error": "Unauthorized"}, 401)
    return await handler(request)


# ---- health -------------------------------------------------------------------------------


async def ready(request: web.Request) -> web.Response:
    state = request.app[STATE]
    ok = state.status == "ready" and not state.engine.paused
    return web.Response(status=200 if ok else 503)


async def health(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if state.status == "draining":
        state.log.sglang("Health check request received during shutdown. Returning 503.")
        return web.Response(status=503)
    if state.status != "ready":
        return web.Response(status=503)
    generation = os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "1").lower()
    if generation in ("0", "false", "no") and request.path == "/health":
        return web.Response(status=200)
    engine = state.engine
    req = engine.new_req(f"HEALTH_CHECK_{P.new_rid()}", 1, 1, ignore_eos=True)
    engine.submit(req)
    await asyncio.sleep(1.0)  # SGLang sleeps 1 s before its first check
    deadline = time.monotonic() + 20
    while not req.finished and time.monotonic() < deadline:
        await req.wait()
    return web.Response(status=200 if req.finished else 503)


# ---- info ---------------------------------------------------------------------------------


def model_info_dict(cfg: SimConfig) -> dict[str, Any]:
    sa = cfg.server_args
    return {
        "model_path": sa["model_path"],
        "served_model_name": sa["served_model_name"],
        "tokenizer_path": sa["tokenizer_path"],
        "is_generation": True,
        "preferred_sampling_params": sa.get("preferred_sampling_params"),
        "weight_version": sa.get("weight_version") or "default",
        "load_format": sa.get("load_format"),
        "reasoning_parser": sa.get("reasoning_parser"),
        "tool_call_parser": sa.get("tool_call_parser"),
        "disaggregation_mode": sa.get("disaggregation_mode") or "null",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
    }


async def model_info(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if request.path == "/get_model_info":
        state.log.warning("Endpoint '/get_model_info' is deprecated and will be removed in a "
                          "future version. Please use '/model_info' instead.")
    return _json(model_info_dict(state.cfg))


def server_info_dict(state: SimState) -> dict[str, Any]:
    cfg = state.cfg
    profile = cfg.profile
    sa = cfg.logged_server_args()
    if "attn_dp_size" in sa:
        sa["enable_dp_attention"] = int(sa.get("attn_dp_size") or 1) > 1
    # SGLang 0.5.23 reports every resolved field verbatim, `api_key` included (only watermark
    # secrets are redacted): clients must not store this snapshot as it comes.
    internal = dict(sa)
    internal.update(
        {
            "world_size": profile.tp,
            "startup_time": state.startup_time,
            "effective_max_running_requests_per_dp": cfg.max_running_requests,
            "last_gen_throughput": getattr(state.engine.stats, "last_gen_throughput", 0.0),
            "memory_usage": {
                "weight": round(profile.weight_gb_per_gpu, 2),
                "kv_cache": round(max(0.0, profile.kv_pool_gb), 2),
                "graph": round(profile.graph_gb, 2),
                "token_capacity": profile.max_total_num_tokens,
            },
        }
    )
    out = dict(sa)
    out.update(
        {
            "launch_command": " ".join(["python3", "-m", "sglang.launch_server", *cfg.argv]),
            "status": "ready" if state.status == "ready" else state.status,
            "max_total_num_tokens": profile.max_total_num_tokens,
            "max_req_input_len": cfg.context_len - 1,
            "startup_time": state.startup_time,
            "hicache_object_layout": None,
            "kv_events": None,
            "internal_states": [internal],
            "version": cfg.version,
            "frontend": "python",
        }
    )
    return out


async def server_info(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if request.path == GET_SERVER_INFO:
        state.log.warning("Endpoint '/get_server_info' is deprecated and will be removed in a "
                          "future version. Please use '/server_info' instead.")
    return _json(server_info_dict(state))


def _model_card(cfg: SimConfig) -> dict[str, Any]:
    name = cfg.served_model_name
    return {"id": name, "object": "model", "created": int(time.time()), "owned_by": "sglang",
            "root": name, "parent": None, "max_model_len": cfg.context_len}


async def models(request: web.Request) -> web.Response:
    return _json({"object": "list", "data": [_model_card(request.app[STATE].cfg)]})


async def model_card(request: web.Request) -> web.Response:
    cfg = request.app[STATE].cfg
    name = request.match_info["model"]
    if name != cfg.served_model_name:
        return _json({"error": {"message": f"The model '{name}' does not exist",
                                "type": "invalid_request_error", "param": "model",
                                "code": "model_not_found"}}, 404)
    return _json(_model_card(cfg))


FLUSH_POLL_S = 0.005
"""How often a deferred flush looks for idle (SGLang checks once per scheduler loop)."""


async def flush_cache(request: web.Request) -> web.Response:
    """SGLang 0.5.23's /flush_cache: `timeout` (query, float >= 0, default 0) is how long to
    wait for the scheduler to go idle. Sources: srt/entrypoints/http_server.py flush_cache
    (200 FLUSH_OK, else 400 with the message or "Flush cache failed."),
    srt/managers/scheduler_components/flush_wrapper.py SchedulerFlushWrapper (timeout 0:
    flush now or fail; else defer until idle or the deadline, "Timed out waiting for idle
    state."; a second flush while one waits: "Another flush_cache is already in progress."),
    srt/managers/scheduler.py Scheduler.flush_cache (the log lines)."""
    state = request.app[STATE]
    try:
        timeout_s = float(request.query.get("timeout", "0"))
    except ValueError:
        timeout_s = -1.0
    if not timeout_s >= 0.0:  # FastAPI's Query(ge=0.0) refuses it (and nan) with a 422
        return _json({"detail": [{"type": "greater_than_equal", "loc": ["query", "timeout"],
                                  "msg": "Input should be greater than or equal to 0"}]}, 422)
    if state.flush_pending:
        return web.Response(text="Another flush_cache is already in progress.", status=400)
    engine = state.engine
    if engine.in_flight and timeout_s > 0.0:
        state.flush_pending = True
        try:
            deadline = time.monotonic() + timeout_s
            while engine.in_flight and time.monotonic() < deadline:
                await asyncio.sleep(FLUSH_POLL_S)
        finally:
            state.flush_pending = False
        if engine.in_flight:
            state.log.warning("Deferred flush_cache timed out while waiting for idle state.")
            return web.Response(text="Timed out waiting for idle state.", status=400)
    if engine.in_flight:
        state.log.warning(
            f"Cache not flushed because there are pending requests. "
            f"#queue-req: {len(engine.waiting)}, #running-req: {len(engine.running)}",
            engine.prefix,
        )
        return web.Response(text="Flush cache failed.\n", status=400)
    engine.flush_prefix_cache()
    state.log.sglang("Cache flushed successfully!", engine.prefix)
    return web.Response(text=FLUSH_OK)


async def metrics(request: web.Request) -> web.Response:
    state = request.app[STATE]
    body = state.metrics.render(state)
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; "
                                            "charset=utf-8"})


async def sim_lateness(request: web.Request) -> web.Response:
    """Sim-only (no SGLang route): console.sim.lateness says what it measures."""
    lateness = request.app[STATE].lateness
    if lateness is None:
        return _error("lateness is measured in ideal-timing mode only", 404)
    reset = bool(request.query.get("reset"))
    procs = request.app[STATE].procs
    if procs is None:
        body = lateness.summary()
    else:  # every process's samples (console.sim.procs)
        merged = Lateness(lateness.ttft_s, lateness.itl_s)
        merged.add_raw(lateness.raw())
        for raw in await procs.gather_lateness(reset, request.headers.get("Authorization")):
            merged.add_raw(raw)
        body = merged.summary()
    if reset:
        lateness.reset()
    return _json(body)


async def sim_lateness_local(request: web.Request) -> web.Response:
    """Sim-only: this one process's raw samples, for a sibling merging them (console.sim.procs)."""
    lateness = request.app[STATE].lateness
    if lateness is None:
        return _error("lateness is measured in ideal-timing mode only", 404)
    body = lateness.raw()
    if request.query.get("reset"):
        lateness.reset()
    return web.Response(body=body, content_type="application/octet-stream")


def _log_freeze_gc(state: SimState) -> None:
    """/freeze_gc (http_server.py) -> TokenizerManager.freeze_gc: the scheduler ranks and the
    detokenizer freeze too (managers/tokenizer_manager.py, scheduler.py handle_freeze_gc,
    detokenizer_manager.py), each writing utils/common.py freeze_gc's line at the version's
    level (0.5.18 INFO, 0.5.23 DEBUG; 0.4.10 none)."""
    level = state.cfg.traits.freeze_gc_level
    if not level:
        return
    state.log.sglang(shapes.freeze_gc("Tokenizer Manager", (1843, 312, 51922)), level=level)
    sa = state.cfg.server_args
    for tp_rank in range(state.cfg.profile.tp):
        state.log.sglang(shapes.freeze_gc("Scheduler", (2011, 407, 88214)),
                         rank_prefix(sa, tp_rank), level=level)
    state.log.sglang(shapes.freeze_gc("Detokenizer Manager", (611, 95, 20873)), level=level)


async def simple_ok(request: web.Request) -> web.Response:
    state = request.app[STATE]
    if request.path == "/pause_generation":
        state.engine.paused = True
    elif request.path == "/continue_generation":
        state.engine.paused = False
        state.engine._wake.set()
    elif request.path == "/freeze_gc":
        _log_freeze_gc(state)
    elif request.path == "/abort_request":
        try:
            body = await request.json()
        except ValueError:
            body = {}
        if body.get("abort_all"):
            state.engine.abort_all()
    return web.Response(status=200)


# ---- generation ---------------------------------------------------------------------------


async def _read_json(request: web.Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.read())
    except ValueError as exc:
        raise P.BadRequest(f"Invalid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise P.BadRequest("The request body must be a JSON object.")
    return body


def _check_context(cfg: SimConfig, input_len: int, max_new: int) -> None:
    ctx = cfg.context_len
    if input_len >= ctx:
        raise P.BadRequest(
            f"The input ({input_len} tokens) is longer than the model's context length "
            f"({ctx} tokens)."
        )
    if input_len + max_new > ctx:
        raise P.BadRequest(
            f"Requested token count exceeds the model's maximum context length of {ctx} tokens. "
            f"You requested a total of {input_len + max_new} tokens: {input_len} tokens from the "
            f"input messages and {max_new} tokens for the completion. Please reduce the number "
            "of tokens in the input messages or the completion to fit within the limit."
        )


def _submit(state: SimState, rid: str, ids: list[int], max_new: int, ignore_eos: bool) -> Req:
    input_len = len(ids)
    _check_context(state.cfg, input_len, max_new)
    req = state.engine.new_req(rid, input_len, max_new, ignore_eos, ids)
    state.engine.submit(req)
    state.first_request_seen.set()
    return req


async def _sse_response(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                           "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response


@contextlib.asynccontextmanager
async def _streaming(state: SimState, req: Any) -> AsyncIterator[None]:
    """While a stream is sent: a client that goes away is logged as SGLang 0.5.23 logs it and
    aborted; the request always leaves the engine.

    SGLang's stream ends quietly on a disconnect: `generate_request` raises "Request is
    disconnected from the client side (type 3)..." (`tokenizer_manager.py:2071`) and the
    streaming route logs it at INFO and returns (`http_server.py:957-964`). No traceback:
    a write to the closed socket is swallowed here instead of reaching aiohttp's error log."""
    try:
        yield
    except ConnectionResetError:
        _log_disconnect(state, req)  # the handler returns; aiohttp finishes quietly
    except asyncio.CancelledError:
        _log_disconnect(state, req)
        raise
    finally:
        state.engine.abort(req)


def _log_disconnect(state: SimState, req: Any) -> None:
    state.log.sglang("[http_server] Client disconnected: Request is disconnected from the "
                     f"client side (type 3). Abort request obj.rid='{req.rid}'")


async def generate(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    try:
        body = await _read_json(request)
        params = body.get("sampling_params") or {}
        ids = P.prompt_ids_native(body)
        max_new = int(params.get("max_new_tokens") or P.DEFAULT_MAX_NEW_TOKENS)
        rid = str(body.get("rid") or P.new_rid())
        req = _submit(state, rid, ids, max_new, bool(params.get("ignore_eos")))
    except (P.BadRequest, TypeError, ValueError) as exc:
        return _error(str(exc))
    if not body.get("stream"):
        try:
            while not req.finished:
                await req.wait()
        finally:
            state.engine.abort(req)
        return _json(P.native_result(req))
    incremental = bool(state.cfg.server_args.get("incremental_streaming_output"))
    stream = NativeStream(req, incremental, state.lateness)
    response = await _sse_response(request)  # headers leave here (aiohttp sends them at once)
    chunked = response.headers.get("Transfer-Encoding", "").lower() == "chunked"
    stream.attach(request.transport, chunked)
    async with _streaming(state, req):
        while not stream.done:
            if not stream.has_news():
                req.sink = stream.push  # the engine writes from here on (console/sim/streams.py)
                try:
                    await req.wait()
                finally:
                    req.sink = None
                continue
            await response.write(stream.event())
            stream.written()
    return response


def _include_usage(state: SimState, body: dict[str, Any]) -> tuple[bool, bool]:
    options = body.get("stream_options") or {}
    default = bool(state.cfg.server_args.get("stream_response_default_include_usage"))
    return bool(options.get("include_usage")) or default, bool(
        options.get("continuous_usage_stats"))


async def openai(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    chat = request.path.endswith("/chat/completions")
    if not request.content_type.startswith("application/json"):
        return _json({"detail": "Unsupported Media Type: Only 'application/json' is allowed"},
                     400)
    try:
        body = await _read_json(request)
        if chat:
            ids = P.prompt_ids_chat(body.get("messages"))
            max_new = body.get("max_completion_tokens") or body.get("max_tokens")
        else:
            ids = P.prompt_ids_openai(body.get("prompt"))
            max_new = body.get("max_tokens")
        input_len = len(ids)
        max_new = int(max_new) if max_new is not None else (
            P.DEFAULT_MAX_NEW_TOKENS if not chat else state.cfg.context_len - input_len - 1)
        rid = P.new_rid()
        req = _submit(state, rid, ids, max(1, max_new), bool(body.get("ignore_eos")))
    except (P.BadRequest, TypeError, ValueError) as exc:
        return _json({"object": "error", "message": str(exc), "type": "BadRequestError",
                      "param": None, "code": 400}, 400)
    model = str(body.get("model") or state.cfg.served_model_name)
    created = int(time.time())
    oid = ("chatcmpl-" if chat else "cmpl-") + rid
    if not body.get("stream"):
        try:
            while not req.finished:
                await req.wait()
        finally:
            state.engine.abort(req)
        make = P.chat_body if chat else P.completion_body
        return _json(make(req, model, created, oid))
    include_usage, continuous = _include_usage(state, body)
    head = (f'{{"id":"{oid}","object":"{"chat.completion.chunk" if chat else "text_completion"}",'
            f'"created":{created},"model":{json.dumps(model)},"choices":[')
    response = await _sse_response(request)
    lateness = state.lateness
    sent = 0
    async with _streaming(state, req):
        if chat:
            await response.write(P.sse(
                head + '{"index":0,"delta":{"role":"assistant","content":"",'
                '"reasoning_content":null,"tool_calls":null},"logprobs":null,'
                '"finish_reason":null,"matched_stop":null}],"usage":null}'))
        while True:
            if len(req.output_ids) == sent and not req.finished:
                await req.wait()
            n = len(req.output_ids)
            ids = req.output_ids
            if req.finished and ids and ids[-1] == EOS_TOKEN_ID:
                n -= 1  # the EOS token is not text
            delta = P.json_text_of(ids[:n], sent) if n > sent else ""
            before, sent = sent, max(sent, n)
            reason, matched = P.openai_finish(req) if req.finished else (None, None)
            fr = "null" if reason is None else f'"{reason}"'
            ms = "null" if matched is None else json.dumps(matched)
            use = P._compact(P.usage(req)) if continuous else "null"
            if chat:
                choice = (f'{{"index":0,"delta":{{"role":null,"content":"{delta}",'
                          f'"reasoning_content":null,"tool_calls":null}},"logprobs":null,'
                          f'"finish_reason":{fr},"matched_stop":{ms}}}')
            else:
                choice = (f'{{"index":0,"text":"{delta}","logprobs":null,"finish_reason":{fr},'
                          f'"matched_stop":{ms}}}')
            await response.write(P.sse(f'{head}{choice}],"usage":{use}}}'))
            if lateness is not None and sent > before:
                lateness.wrote(req.created, before, time.monotonic())
            if req.finished:
                break
        if include_usage:
            u = P.usage(req)
            if not chat:
                u = {k: v for k, v in u.items() if v is not None}
            await response.write(P.sse(f'{head}],"usage":{P._compact(u)}}}'))
        await response.write(P.DONE)
    return response


def build_app(state: SimState) -> web.Application:
    app = web.Application(middlewares=[access_log, api_key_auth], client_max_size=64 * 1024 * 1024)
    app[STATE] = state
    r = app.router
    r.add_get("/ready", ready)
    for path in ("/health", HEALTH_GENERATE, "/ping"):
        r.add_get(path, health)
    r.add_get(MODEL_INFO, model_info)
    r.add_get("/get_model_info", model_info)
    for path in SERVER_INFO_PATHS:
        r.add_get(path, server_info)
    r.add_get("/v1/models", models)
    r.add_get("/v1/models/{model}", model_card)
    r.add_route("GET", FLUSH_CACHE, flush_cache)
    r.add_route("POST", FLUSH_CACHE, flush_cache)
    if state.cfg.server_args.get("enable_metrics"):
        r.add_get("/metrics", metrics)
    r.add_post(GENERATE, generate)
    r.add_put(GENERATE, generate)
    r.add_post("/v1/completions", openai)
    r.add_post("/v1/chat/completions", openai)
    r.add_get("/_sim/lateness", sim_lateness)
    r.add_get("/_sim/lateness/local", sim_lateness_local)
    for path in ("/freeze_gc", "/pause_generation", "/continue_generation", "/abort_request",
                 "/start_profile", "/stop_profile"):
        r.add_post(path, simple_ok)
    return app
