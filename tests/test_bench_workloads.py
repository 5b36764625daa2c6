"""Workload kinds, arrival schedules and the rate axis (console/bench/workload.py, arrivals.py,
knee.py): what each kind puts on the wire, without a server."""

from __future__ import annotations

import itertools
import json
import math
import random
import statistics
from pathlib import Path

import pytest

from console.bench.arrivals import arrival_offsets
from console.bench.knee import find_knee, knee_of_steps
from console.bench.models import StepMetrics, StepResult
from console.bench.report import steps_table
from console.bench.workload import (
    TRACE_BLOCK_TOKENS,
    PromptSource,
    Workload,
    expected_cached_tokens,
    group_prefix,
    load_trace,
    sharegpt_lengths,
    trace_offsets,
)
from console.config_models import SweepPreset


def _ids(body: bytes) -> list[int]:
    return list(json.loads(body)["input_ids"])


def test_shared_prefix_prompts_are_group_prefix_plus_question_across_workers() -> None:
    w = Workload("generate", 8, 4, kind="shared-prefix", groups=3, prompts_per_group=4,
                 prefix_len=32, seed=5)
    sources = [PromptSource(w, random.Random(i), part=i, parts=2) for i in range(2)]
    prompts = [_ids(s.next().body) for _ in range(6) for s in sources]
    prefixes = {tuple(group_prefix(w, g)) for g in range(3)}
    assert len(prefixes) == 3
    for ids in prompts:
        assert len(ids) == 32 + 8
        assert tuple(ids[:32]) in prefixes  # the same system prompts in every worker
    # Two workers together send every group x question slot once per round: 12 slots.
    seen = [tuple(ids[:32]) for ids in prompts]
    assert sorted(seen.count(p) for p in prefixes) == [4, 4, 4]


def test_expected_cached_tokens_counts_each_groups_first_request_as_a_miss() -> None:
    w = Workload("generate", 8, 4, kind="shared-prefix", groups=4, prompts_per_group=5,
                 prefix_len=100)
    assert expected_cached_tokens(w, 20) == (20 - 4) * 100
    assert expected_cached_tokens(w, 40) == (40 - 4) * 100  # a second round: all hits


def test_multi_turn_carries_every_answer_into_the_next_turn() -> None:
    w = Workload("generate", 5, 3, kind="multi-turn", turns=3)
    source = PromptSource(w, random.Random(1))
    first = source.next()
    ids1 = _ids(first.body)
    assert len(ids1) == 5
    source.answered(first, [7, 8, 9])
    second = source.next()
    ids2 = _ids(second.body)
    assert ids2[:8] == [*ids1, 7, 8, 9] and len(ids2) == 13
    source.answered(second, [1, 2, 3])
    third = source.next()
    assert len(_ids(third.body)) == 21
    source.answered(third, [4])
    assert len(_ids(source.next().body)) == 5  # three turns done: a new conversation


def test_multi_turn_chat_appends_the_answer_as_an_assistant_message() -> None:
    w = Workload("chat", 4, 2, kind="multi-turn", turns=2)
    source = PromptSource(w, random.Random(1))
    first = source.next()
    source.answered(first, [" alpha", " beta"])
    messages = json.loads(source.next().body)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == " alpha beta"


def test_a_failed_turn_ends_its_conversation() -> None:
    w = Workload("generate", 5, 3, kind="multi-turn", turns=3)
    source = PromptSource(w, random.Random(1))
    source.answered(source.next(), None)
    assert len(_ids(source.next().body)) == 5


def test_long_context_reaches_the_context_length() -> None:
    w = Workload("generate", 100, 10, kind="long-context", context_len=4096)
    source = PromptSource(w, random.Random(1))
    lengths = {len(_ids(source.next().body)) for _ in range(12)}
    assert min(lengths) == 100 and max(lengths) == 4096 - 10 - 1
    assert len(lengths) >= 4


def test_sharegpt_lengths_are_the_bundled_real_ones_pruned_to_the_context() -> None:
    pairs = sharegpt_lengths()
    assert len(pairs) == 512
    # Real chat lengths are skewed: the mean sits well above the median.
    inputs = [a for a, _ in pairs]
    assert statistics.mean(inputs) > 1.5 * statistics.median(inputs)
    w = Workload("generate", 1, 1, kind="sharegpt", context_len=1024)
    source = PromptSource(w, random.Random(3))
    for _ in range(50):
        prompt = source.next()
        n = len(_ids(prompt.body))
        assert n >= 2 and prompt.output_len >= 2 and n + prompt.output_len <= 1024
        assert (n, prompt.output_len) in set(pairs)


def test_mooncake_trace_rows_share_blocks_by_hash_id(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    rows = [{"timestamp": 1000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]},
            {"timestamp": 3000, "input_length": 700, "output_length": 6, "hash_ids": [1, 2]},
            {"timestamp": 1500, "input_length": 100, "output_length": 7, "hash_ids": [9]}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    trace = load_trace(path)
    assert [r.timestamp_ms for r in trace] == [1000, 1500, 3000]
    assert trace_offsets(trace) == [0.0, 0.5, 2.0]
    source = PromptSource(Workload("generate", 1, 1, kind="trace", trace=trace),
                          random.Random(1))
    a, b, c = (source.next() for _ in range(3))
    ids_a, ids_c = _ids(a.body), _ids(c.body)
    assert len(ids_a) == 600 and len(ids_c) == 700 and c.output_len == 6
    assert len(_ids(b.body)) == 100 and b.output_len == 7
    assert ids_a == ids_c[:600]  # hash ids 1, 2: the same first 2 x 512 tokens
    assert ids_c[:TRACE_BLOCK_TOKENS] == ids_a[:TRACE_BLOCK_TOKENS]
    with pytest.raises(ValueError, match="not a Mooncake trace line"):
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"input_length": 3}\n')
        load_trace(bad)


def test_poisson_and_gamma_arrivals_have_the_asked_rate_and_spread() -> None:
    poisson = arrival_offsets(10.0, count=4001, seed=1)
    gaps = [b - a for a, b in itertools.pairwise(poisson)]
    assert poisson[0] == 0.0  # bench_serving sends the first request at once
    assert statistics.mean(gaps) == pytest.approx(0.1, rel=0.05)
    assert statistics.stdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, rel=0.1)
    bursty = arrival_offsets(10.0, count=4001, burstiness=0.25, seed=1)
    gaps = [b - a for a, b in itertools.pairwise(bursty)]
    assert statistics.mean(gaps) == pytest.approx(0.1, rel=0.1)
    # gamma(shape k): coefficient of variation 1/sqrt(k) = 2
    assert statistics.stdev(gaps) / statistics.mean(gaps) == pytest.approx(2.0, rel=0.15)
    assert arrival_offsets(math.inf, count=3) == [0.0, 0.0, 0.0]
    boxed = arrival_offsets(20.0, count=None, seconds=5.0, seed=2)
    assert boxed[-1] < 5.0 and len(boxed) == pytest.approx(100, rel=0.3)
    with pytest.raises(ValueError):
        arrival_offsets(math.inf, count=None, seconds=5.0)


def _rate_step(index: int, rate: float, total: float) -> StepResult:
    metrics = StepMetrics(concurrency=0, completed=10, total_tok_s=total, request_rate=rate)
    return StepResult(index=index, concurrency=0, status="ok", metrics=metrics)


def test_the_knee_of_a_rate_sweep_is_a_rate() -> None:
    steps = [_rate_step(0, 1, 100.0), _rate_step(1, 2, 199.0), _rate_step(2, 4, 390.0),
             _rate_step(3, 8, 410.0), _rate_step(4, math.inf, 415.0)]
    knee = knee_of_steps(steps)
    assert knee.kind == "saturates" and knee.axis == "rate"
    assert knee.level == 4 and knee.next_level == 8 and knee.concurrency is None
    assert "4 req/s" in knee.sentence
    table = steps_table(steps)
    assert " 4/s " in table and "inf/s" in table
    # inf counts as one doubling past the largest finite rate: still scaling by 50% is scaling
    knee = find_knee([(1, 100.0), (2, 200.0), (math.inf, 300.0)], axis="rate")
    assert knee.kind == "scaling" and knee.level == math.inf


def test_rate_levels_survive_the_json_round_trip() -> None:
    spec = SweepPreset(request_rate=[1.0, math.inf], max_concurrency=8, burstiness=0.5)
    again = SweepPreset.model_validate(json.loads(json.dumps(spec.model_dump(mode="json"))))
    assert again.request_rate == [1.0, math.inf]
    step = _rate_step(0, math.inf, 1.0)
    back = StepMetrics.model_validate_json(step.metrics.model_dump_json())  # type: ignore[union-attr]
    assert back.request_rate == math.inf
    with pytest.raises(ValueError, match="trace_file"):
        SweepPreset(workload="trace")
