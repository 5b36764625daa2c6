"""The simulator's prefix cache (console/sim/radix.py, SGLang's RadixCache) as a client sees
it: `#cached-token` in the Prefill batch lines, `cached_tokens` in meta_info, against what
the workload's structure says a cache must supply."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from console.bench.engines import NativeEngine
from console.bench.models import StepMetrics
from console.bench.sweep import run_sweep
from console.bench.workload import Workload, expected_cached_tokens
from console.config_models import SweepPreset
from console.sim.radix import RadixCache
from tests.support.sim_fixtures import SimFactory, SimProcess

CACHED = re.compile(r"Prefill batch, #new-seq: \d+, #new-token: (\d+), #cached-token: (\d+)")


def test_radix_cache_matches_splits_locks_and_evicts_lru() -> None:
    tree = RadixCache()
    assert tree.insert([1, 2, 3, 4])[0] == 4
    matched, node = tree.match([1, 2, 9])
    assert matched == 2 and tree.size == 4  # split at the divergence, nothing added
    assert tree.insert([1, 2, 7, 8])[0] == 2
    assert tree.evictable == 6
    assert tree.lock(node) == 2 and tree.protected == 2 and tree.evictable == 4
    # [1, 2, 3, 4]'s tail was used longest ago: it goes first; the locked prefix stays.
    tree.match([1, 2, 7, 8])
    assert tree.evict(1) == 2
    assert tree.match([1, 2, 3, 4])[0] == 2 and tree.match([1, 2, 7, 8])[0] == 4
    assert tree.evict(100) == 2  # only the unlocked [7, 8]
    assert tree.unlock(node) == 2 and tree.evictable == 2
    assert tree.evict(100) == 2 and tree.size == 0


def _run(sim: SimProcess, spec: SweepPreset) -> StepMetrics:
    outcome = asyncio.run(run_sweep(spec, sim.base_url, engine=NativeEngine(max_workers=1),
                                    snapshot_server_info=False))
    step = outcome.steps[-1]
    assert step.status == "ok" and step.metrics is not None, step.error
    return step.metrics


def _log_cached(sim: SimProcess) -> tuple[int, int]:
    """(#new-token, #cached-token) summed over the Prefill lines of the last step (after its
    /flush_cache)."""
    text = sim.log_text().rsplit("Cache flushed successfully!", 1)[-1]
    pairs = [(int(a), int(b)) for a, b in CACHED.findall(text)]
    return sum(a for a, _ in pairs), sum(b for _, b in pairs)


@pytest.mark.slow
def test_shared_prefix_hits_are_logged_as_sglang_logs_them(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-speed", "20")
    spec = SweepPreset(concurrency=[4], workload="shared-prefix", prefix_groups=4,
                       prompts_per_group=8, prefix_len=256, input_len=32, output_len=8,
                       num_prompts=32)
    metrics = _run(sim, spec)
    new, cached = _log_cached(sim)
    assert new + cached == metrics.input_tokens  # every prompt token computed or cached
    assert metrics.cached_tokens == cached  # meta_info agrees with the log
    w = Workload("generate", 32, 8, kind="shared-prefix", groups=4, prompts_per_group=8,
                 prefix_len=256, seed=1 * 100_003 + 0)
    expected = expected_cached_tokens(w, 32)
    # Requests of one group admitted in the same first prefill batch all miss (the prompt
    # enters the tree after the batch): a little below the ideal, never above it (bar a
    # chance match of a question's first token).
    assert 0.75 * expected <= cached <= expected + 32
    random = _run(sim, spec.model_copy(update={"workload": "random", "input_len": 288}))
    assert random.cached_tokens <= 0.01 * random.input_tokens


@pytest.mark.slow
def test_multi_turn_turns_reuse_the_whole_previous_turn(sim_factory: SimFactory) -> None:
    sim = sim_factory("--sim-speed", "20")
    i, o = 40, 10
    spec = SweepPreset(concurrency=[1], workload="multi-turn", turns=3, input_len=i,
                       output_len=o, num_prompts=6)
    metrics = _run(sim, spec)
    _, cached = _log_cached(sim)
    # Per conversation: turn 2 reuses turn 1's prompt and all but its last output token
    # (whose KV is never computed), turn 3 turn 2's.
    per_conversation = (i + o - 1) + (2 * i + 2 * o - 1)
    assert 2 * per_conversation <= cached <= 2 * per_conversation + 6
    assert metrics.cached_tokens == cached
    # The context grows: 2 conversations x (40 + 90 + 140) prompt tokens.
    assert metrics.input_tokens == 2 * (i + (2 * i + o) + (3 * i + 2 * o))


@pytest.mark.slow
def test_bench_serving_generated_shared_prefix_hits_the_sims_cache(sim_factory: SimFactory,
                                                                   tmp_path: Path) -> None:
    """SGLang's own client, `--dataset-name generated-shared-prefix` (what the bench-serving
    engine sends for workload shared-prefix): the sim caches what its structure promises."""
    pytest.importorskip("transformers", reason="needs tests/requirements-bench.txt")
    import sys

    from console.bench.bench_serving import BenchServingEngine
    from console.host.local import LocalTransport
    from tests.support.sglang_bench import SHIM_PATH
    from tests.support.tokenizer import build_tokenizer

    sim = sim_factory("--sim-speed", "20")
    tok = build_tokenizer(tmp_path / "tok")
    spec = SweepPreset(concurrency=[4], workload="shared-prefix", prefix_groups=4,
                       prompts_per_group=8, prefix_len=256, input_len=32, output_len=8,
                       num_prompts=32, engine="bench-serving")
    engine = BenchServingEngine(LocalTransport(), host_base_url=sim.base_url,
                                command=[sys.executable, str(SHIM_PATH)], tokenizer=str(tok),
                                workdir=str(tmp_path))
    outcome = asyncio.run(run_sweep(spec, sim.base_url, engine=engine,
                                    snapshot_server_info=False))
    step = outcome.steps[0]
    assert step.status == "ok" and step.metrics is not None, step.error
    new, cached = _log_cached(sim)
    assert new + cached == step.metrics.input_tokens == 32 * (256 + 32)
    expected = (32 - 4) * 256  # each group's first request computes its system prompt
    # bench_serving draws ids from the tokenizer's 1024-word vocabulary, so a question's
    # first tokens now and then match another's: a little above the prefixes is allowed.
    assert 0.75 * expected <= cached <= expected + 32 * 4


@pytest.mark.slow
def test_ids_the_cache_cannot_key_are_refused_not_fatal(sim_factory: SimFactory) -> None:
    import httpx

    sim = sim_factory("--sim-speed", "20")
    for ids in (["a", 1], [1.5], [-3], [1 << 70]):
        resp = httpx.post(f"{sim.base_url}/generate", json={
            "input_ids": ids, "sampling_params": {"max_new_tokens": 2}}, timeout=30)
        assert resp.status_code == 400, (ids, resp.text)
    ok = httpx.post(f"{sim.base_url}/generate", json={
        "input_ids": [5, 6, 7], "sampling_params": {"max_new_tokens": 2}}, timeout=30)
    assert ok.status_code == 200 and ok.json()["meta_info"]["completion_tokens"] == 2


def test_disable_radix_cache_turns_the_tree_off() -> None:
    import io

    from console.sim.args import parse
    from console.sim.config import resolve
    from console.sim.engine import Engine
    from console.sim.logs import SimLog

    def engine(*flags: str) -> Engine:
        args, sim, argv = parse(["--model-path", "m", *flags])
        return Engine(resolve(args, sim, argv), SimLog(err=io.StringIO(), out=io.StringIO()))

    assert engine().tree is not None
    assert engine("--disable-radix-cache").tree is None  # server_args.py: no prefix reuse
