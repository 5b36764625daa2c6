"""Endpoint shapes of the simulated SGLang server over real HTTP."""

from __future__ import annotations

import itertools
import json

import httpx

from tests.support.sim_fixtures import SimFactory, SimProcess


def _events(text: str) -> list[str]:
    assert text.endswith("data: [DONE]\n\n")
    return [block[len("data: "):] for block in text.split("\n\n") if block]


def test_info_endpoints(sim_server: SimProcess) -> None:
    base = sim_server.base_url
    assert httpx.get(f"{base}/ready").status_code == 200
    models = httpx.get(f"{base}/v1/models").json()
    assert models["object"] == "list"
    card = models["data"][0]
    assert card["id"] == "test-model" and card["owned_by"] == "sglang"
    assert card["max_model_len"] == 131072
    missing = httpx.get(f"{base}/v1/models/nope")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"
    info = httpx.get(f"{base}/model_info").json()
    assert info["model_path"] == "test-model" and info["is_generation"] is True
    server = httpx.get(f"{base}/server_info").json()
    assert server["version"] == "0.5.23" and server["status"] == "ready"
    assert server["tp_size"] == 1 and server["attention_backend"] == "flashinfer"
    assert server["max_total_num_tokens"] > 100_000
    assert server["internal_states"][0]["memory_usage"]["token_capacity"] > 0
    assert httpx.get(f"{base}/get_server_info").json()["version"] == "0.5.23"
    flush = httpx.post(f"{base}/flush_cache")
    assert flush.status_code == 200 and flush.text.startswith("Cache flushed.")
    assert httpx.get(f"{base}/metrics").status_code == 404  # no --enable-metrics
    assert "Endpoint '/get_server_info' is deprecated" in sim_server.log_text()


def test_generate_stream_is_cumulative(sim_server: SimProcess) -> None:
    body = {"text": "hello world again", "sampling_params": {"max_new_tokens": 5,
            "ignore_eos": True}, "stream": True}
    resp = httpx.post(f"{sim_server.base_url}/generate", json=body)
    chunks = [json.loads(e) for e in _events(resp.text)[:-1]]
    assert len(chunks) >= 2
    texts = [c["text"] for c in chunks]
    for a, b in itertools.pairwise(texts):
        assert b.startswith(a)
    last = chunks[-1]
    meta = last["meta_info"]
    assert meta["finish_reason"] == {"type": "length", "length": 5}
    assert meta["completion_tokens"] == 5 and len(last["output_ids"]) == 5
    assert meta["prompt_tokens"] == 3
    assert meta["e2e_latency"] > 0
    assert chunks[0]["meta_info"]["finish_reason"] is None
    assert "e2e_latency" not in chunks[0]["meta_info"]
    plain = httpx.post(f"{sim_server.base_url}/generate",
                       json={"input_ids": [5, 6, 7, 8], "sampling_params": {"max_new_tokens": 3}})
    result = plain.json()
    assert result["meta_info"]["prompt_tokens"] == 4
    assert result["meta_info"]["completion_tokens"] <= 3


def test_openai_streams_and_usage(sim_server: SimProcess) -> None:
    base = sim_server.base_url
    body = {"model": "test-model", "prompt": "one two three", "max_tokens": 4, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    events = [json.loads(e) for e in _events(httpx.post(f"{base}/v1/completions",
                                                        json=body).text)[:-1]]
    assert all(e["object"] == "text_completion" for e in events)
    usage = events[-1]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 4
    assert usage["usage"]["prompt_tokens"] == 3 and usage["usage"]["total_tokens"] == 7
    assert events[-2]["choices"][0]["finish_reason"] == "length"
    text = "".join(e["choices"][0]["text"] for e in events[:-1])
    assert len(text.split()) == 4
    chat = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}],
            "max_completion_tokens": 3, "stream": True, "ignore_eos": True}
    chunks = [json.loads(e) for e in _events(httpx.post(f"{base}/v1/chat/completions",
                                                        json=chat).text)[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[0]["object"] == "chat.completion.chunk"
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["usage"] is None for c in chunks)  # no include_usage: no usage chunk
    no_json = httpx.post(f"{base}/v1/completions", content=b"{}",
                         headers={"Content-Type": "text/plain"})
    assert no_json.status_code == 400
    full = httpx.post(f"{base}/v1/chat/completions", json={**chat, "stream": False}).json()
    assert full["object"] == "chat.completion"
    assert full["usage"]["completion_tokens"] == 3


def test_context_length_error(sim_factory: SimFactory) -> None:
    sim = sim_factory("--context-length", "16")
    resp = httpx.post(f"{sim.base_url}/generate",
                      json={"input_ids": list(range(20)), "sampling_params": {}})
    assert resp.status_code == 400
    assert "longer than the model's context length (16 tokens)" in resp.json()["error"]["message"]
