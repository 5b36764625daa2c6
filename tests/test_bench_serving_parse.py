"""Parsing SGLang's bench_serving output, from real records (tests/data/bench/, made by
tests/bench/bench_client_fixtures.py running SGLang's client against the simulator)."""

from __future__ import annotations

import json
import math

import pytest

from console.bench.bench_serving import (
    bench_argv,
    parse_jsonl,
    parse_result_block,
    record_to_metrics,
)
from console.config_models import SweepPreset
from tests.support.bench_fixtures import DATA


@pytest.mark.parametrize("name", ["generate-c4", "chat-c2"])
def test_jsonl_with_bare_infinity_parses(name: str) -> None:
    text = (DATA / f"{name}.jsonl").read_text()
    assert "Infinity" in text  # the real file really has the bare token
    with pytest.raises(ValueError):
        json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    (record,) = parse_jsonl(text)
    assert math.isinf(record["request_rate"])
    assert record["completed"] == 8
    assert record["random_range_ratio"] == 1.0


@pytest.mark.parametrize(("name", "conc"), [("generate-c4", 4), ("chat-c2", 2)])
def test_printed_block_agrees_with_the_jsonl(name: str, conc: int) -> None:
    lines = (DATA / f"{name}.out").read_text().splitlines()
    block = parse_result_block(lines)
    assert block is not None
    (record,) = parse_jsonl((DATA / f"{name}.jsonl").read_text())
    assert block["max_concurrency"] == conc == record["max_concurrency"]
    assert block["completed"] == record["completed"]
    for key in ("output_throughput", "total_throughput", "median_ttft_ms", "p99_itl_ms",
                "mean_tpot_ms", "median_e2e_latency_ms", "concurrency"):  # fmt: skip
        assert block[key] == pytest.approx(record[key], abs=0.006), key
    assert block["max_itl_ms"] > 0


def test_record_becomes_labelled_metrics() -> None:
    (record,) = parse_jsonl((DATA / "generate-c4.jsonl").read_text())
    m = record_to_metrics(record, 4, num_prompts=8)
    assert m.engine == "bench-serving"
    assert m.completed == 8 and m.errors == 0
    assert m.output_tok_s == pytest.approx(record["output_throughput"])
    assert m.total_tok_s == pytest.approx(record["total_throughput"])
    assert m.total_tok_s > m.output_tok_s
    assert m.ttft_ms.p50 == record["median_ttft_ms"]
    assert m.itl_ms.p99 == record["p99_itl_ms"]
    assert m.output_tokens == 8 * 16 and m.input_tokens == 8 * 64


def test_crashed_run_has_no_block() -> None:
    lines = (DATA / "generate-c4.out").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "Serving Benchmark Result" in line)
    assert parse_result_block(lines[: start + 10]) is None  # cut off before the closing line
    assert parse_result_block(["UserWarning: All requests failed.", "IndexError: ..."]) is None


def test_argv_fixed_lengths_offline_dataset_and_per_step_file() -> None:
    spec = SweepPreset(concurrency=[8], input_len=128, output_len=32, warmup_prompts=2)
    argv = bench_argv(["python3", "-m", "sglang.benchmark.serving"], spec, 8,
                      base_url="http://127.0.0.1:30000", tokenizer="/tok",
                      output_file="/tmp/x-3.jsonl", num_prompts=64)  # fmt: skip
    pairs = dict(zip(argv[3::2], argv[4::2], strict=False))
    assert pairs["--max-concurrency"] == "8"
    assert pairs["--random-range-ratio"] == "1"
    assert pairs["--dataset-name"] == "random-ids"
    assert pairs["--output-file"] == "/tmp/x-3.jsonl"
    assert "--tokenize-prompt" in argv and "--flush-cache" in argv
    chat = bench_argv(["b"], spec.model_copy(update={"endpoint": "chat"}), 8,
                      base_url="u", tokenizer=None, output_file="f", num_prompts=8)  # fmt: skip
    assert chat[chat.index("--backend") + 1] == "sglang-oai-chat"
    assert "--tokenize-prompt" not in chat
