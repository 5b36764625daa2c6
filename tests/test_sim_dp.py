"""The simulator's layouts: DP replicas with their own scheduler and KV pool, dealt as SGLang's
DataParallelController deals them (round robin by default), attention DP, and the startup lines
a real DP launch writes (tests/data/logs/real/*dp*: one `KV Cache is allocated` and one sizing
line per DP rank, under that rank's prefix)."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from console.sglang.startup import parse_startup
from console.sim.args import parse
from console.sim.config import all_prefixes, dp_layout, leader_prefix, resolve
from console.sim.dp import Dealer, DpEngine
from console.sim.engine import Req
from console.sim.logs import SimLog
from tests.support.sim_fixtures import SimFactory

PREFIX = re.compile(r"^\[[0-9-]+ [0-9:]+((?: [A-Z]+[0-9]+)*)\] (.*)$")


def _cfg(*argv: str):  # type: ignore[no-untyped-def]
    args, sim, rest = parse(["--model-path", "m", *argv])
    return resolve(args, sim, rest, env={})


def _req(rid: str, input_len: int = 8) -> Req:
    return Req(rid=rid, input_len=input_len, max_new=4, ordinal=0, created=0.0)


def test_round_robin_deals_as_the_controller_does() -> None:
    """round_robin_scheduler (data_parallel_controller.py:880-899): rank k, k+1, ... mod N,
    whatever the ranks' loads; health checks count on a counter of their own (:845-862)."""
    dealer = Dealer(3, "round_robin")
    busy = [(100, 10_000), (0, 0), (0, 0)]
    got = [dealer.rank_for(_req(f"r{i}"), busy) for i in range(4)]
    assert dealer.rank_for(_req("HEALTH_CHECK_1"), busy) == 0
    got += [dealer.rank_for(_req(f"r{i}"), busy) for i in range(4, 7)]
    assert got == [0, 1, 2, 0, 1, 2, 0]


def test_total_requests_goes_to_the_least_loaded_rank() -> None:
    dealer = Dealer(2, "total_requests")
    assert dealer.rank_for(_req("a"), [(5, 0), (2, 0)]) == 1
    assert dealer.rank_for(_req("b"), [(1, 0), (2, 0)]) == 0
    tokens = Dealer(2, "total_tokens")
    assert tokens.rank_for(_req("c"), [(1, 900), (3, 100)]) == 1


def test_auto_resolves_to_round_robin_and_dp_attention_is_resolved() -> None:
    cfg = _cfg("--tp-size", "4", "--dp-size", "2")
    assert cfg.server_args["load_balance_method"] == "round_robin"
    assert dp_layout(cfg.server_args) == (2, 1)
    assert cfg.gpus_in_use() == 8
    old = _cfg("--tp-size", "8", "--dp-size", "8", "--enable-dp-attention")
    # 0.5.23 parallel_hook.py handle_deprecated_dp_attention: attn_dp_size=8, dp_size=1
    assert (old.server_args["attn_dp_size"], old.server_args["dp_size"]) == (8, 1)
    assert old.gpus_in_use() == 8 and old.profile.attn_dp == 8
    assert leader_prefix(old.server_args, 3) == " DP3 TP3"
    assert len(all_prefixes(old.server_args)) == 8
    assert leader_prefix(cfg.server_args, 1) == " DP1 TP0"


def test_memory_by_layout() -> None:
    """Weights split by TP, KV by replica: a TP4 replica holds twice TP8's weights per GPU
    and so has fewer KV tokens, in a pool of its own."""
    tp8 = _cfg("--tp-size", "8").profile
    dp2 = _cfg("--tp-size", "4", "--dp-size", "2").profile
    assert dp2.weight_gb_per_gpu == pytest.approx(2 * tp8.weight_gb_per_gpu)
    assert dp2.max_total_num_tokens < tp8.max_total_num_tokens
    # attention DP over 8 groups: each group's KV heads on one GPU (attn_tp 1)
    adp = _cfg("--tp-size", "8", "--attn-dp-size", "8").profile
    assert adp.kv_bytes_per_token_per_gpu == pytest.approx(8 * tp8.kv_bytes_per_token_per_gpu)


def test_allreduce_over_the_replica_gpus_and_the_topology() -> None:
    """NCCL over PCIe: a TP4 replica's ring has 6 hops, TP8's 14; NVLink keeps the one-shot
    custom all-reduce at any size; attention DP trades an all-reduce for two gathers."""
    tp8 = _cfg("--tp-size", "8").profile
    dp2 = _cfg("--tp-size", "4", "--dp-size", "2").profile
    assert tp8.allreduce_path == dp2.allreduce_path == "nccl"
    assert dp2.comm_seconds() == pytest.approx(tp8.comm_seconds() * 6 / 14)
    nvl = _cfg("--tp-size", "8", "--sim-nvlink").profile
    assert nvl.allreduce_path == "custom"
    adp = _cfg("--tp-size", "8", "--attn-dp-size", "8").profile
    assert 0 < adp.comm_seconds() < tp8.comm_seconds()


def test_dp_engine_keeps_a_pool_per_replica() -> None:
    cfg = _cfg("--tp-size", "4", "--dp-size", "2")

    async def go() -> DpEngine:
        engine = DpEngine(cfg, SimLog(log_level="error"))
        for i in range(5):
            engine.submit(engine.new_req(f"r{i}", 16, 4, ignore_eos=True))
        return engine

    engine = asyncio.run(go())
    assert engine.dealt == [0, 1, 0, 1, 0]
    assert [len(r.waiting) for r in engine.ranks] == [3, 2]
    assert engine.capacity == 2 * cfg.profile.max_total_num_tokens
    assert len(engine.waiting) == 5 and engine.in_flight == 5


async def _send(base: str, count: int) -> None:
    body = {"input_ids": list(range(3, 40)),
            "sampling_params": {"max_new_tokens": 2, "ignore_eos": True}}
    async with httpx.AsyncClient(timeout=60) as client:
        for _ in range(count):  # one at a time: the controller's order is the arrival order
            (await client.post(f"{base}/generate", json=body)).raise_for_status()


def test_dp_server_deals_round_robin_and_logs_kv_per_replica(sim_factory: SimFactory) -> None:
    sim = sim_factory("--tp-size", "4", "--dp-size", "2", "--sim-speed", "50",
                      "--disable-radix-cache")
    seen = len(sim.log_text())
    asyncio.run(_send(sim.base_url, 6))
    startup = sim.log_text()[:seen].splitlines()
    kv = {m[1]: parse_startup(m[2]) for line in startup if (m := PREFIX.match(line))
          and "KV Cache is allocated" in m[2] and m[1].endswith("TP0")}
    assert set(kv) == {" DP0 TP0", " DP1 TP0"}, startup[-30:]
    tokens = {line.values["tokens"] for line in kv.values() if line is not None}
    assert tokens == {float(_cfg("--tp-size", "4", "--dp-size", "2")
                            .profile.max_total_num_tokens)}
    sizing = [m[1] for line in startup if (m := PREFIX.match(line))
              and m[2].startswith("max_total_num_tokens=")]
    assert sizing == [" DP0 TP0", " DP1 TP0"]
    assert "Launch DP1 starting at GPU #4." in "\n".join(startup)
    # each request's prefill, in order, on the rank round robin dealt it to (the server's own
    # warm-up request went to DP0 before these, so these start at DP1)
    prefills = [m[1] for line in sim.log_text()[seen:].splitlines()
                if (m := PREFIX.match(line)) and m[2].startswith("Prefill batch")]
    assert prefills == [" DP1 TP0", " DP0 TP0"] * 3, prefills
