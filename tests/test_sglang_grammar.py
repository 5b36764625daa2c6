"""console/sglang/: each grammar module on verbatim real lines. Every line below is copied
from a file in tests/data/logs/real/ (named next to it; sources in that folder's INDEX.md) or,
where no real log of that release is in the corpus, built from SGLang's format string (file
and version named)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from console.logs.catalogue import default_catalogue
from console.sglang.batch import parse_batch
from console.sglang.crash import exception_line, is_oom
from console.sglang.dp import NodeBatches, imbalance
from console.sglang.metrics_names import normalise_name, normalise_text
from console.sglang.prefix import dp_rank, parse_prefix, rank_parts
from console.sglang.server_args import (
    decode_graph_ceiling,
    decode_graph_disabled,
    parse_server_args,
    server_args_form,
)
from console.sglang.startup import parse_startup

REAL = Path(__file__).parent / "data" / "logs" / "real"


def _line(slug: str, needle: str) -> str:
    """The first line of a corpus log containing `needle` (so the test reads real text)."""
    for line in (REAL / f"{slug}.log").read_text("utf-8").splitlines():
        if needle in line:
            return line
    raise AssertionError(f"{needle!r} not in {slug}")


# -- prefix ----------------------------------------------------------------------------------

def test_prefix_shapes() -> None:
    dated = parse_prefix(_line("ascend-r1-w4a8-dp4-ep16-eagle-cpugraph", "] Decode batch"))
    assert dated.shape == "date_time_ranks" and dated.ranks.startswith("DP")
    assert dated.message.startswith("Decode batch")
    config = parse_prefix(_line("pr11854-h20-logging-config-dp-ep-mtp", "Decode batch"))
    assert (config.shape, config.timestamp, config.ranks, config.level) == (
        "logging_config", "2025-10-20 03:02:22", "DP3 TP3 EP3", "INFO")
    assert config.message.startswith("Decode batch. #running-req: 32")
    spaced = parse_prefix(_line("antgroup4-h20-logging-config-spaced-rank", "Decode batch"))
    assert spaced.ranks == "DP15 TP15 EP15" and spaced.message.startswith("Decode batch.")
    cut = parse_prefix(_line("gh26248-swa-kv-full-retraction", "Decode batch"))  # lost `[`
    assert (cut.timestamp, cut.ranks) == ("2026-05-24 03:51:44", "TP0")
    glued = parse_prefix(_line("ascend-qwen3-480b-deepep-dp4-2node-npugraph-false",
                               "s/it][2026-01-17 10:37:08"))
    assert glued.ranks == "DP0 TP0 EP0" and glued.message.startswith("Decode batch")
    # Time only (the shape issue 23 quotes) and 0.1/0.2's `[gpu_id=N] `
    # (srt/managers/controller/tp_worker.py: f"[gpu_id={self.gpu_id}] Decode batch. ").
    assert parse_prefix("[16:43:29 TP0] Prefill batch. x").shape == "time_ranks"
    old = parse_prefix("[2024-07-20 10:00:00 TP0] [gpu_id=0] Decode batch. #running-req: 1")
    assert old.ranks == "TP0 GPU0" and old.message.startswith("Decode batch.")
    assert parse_prefix("Traceback (most recent call last):").shape == "none"


def test_rank_parts_and_dp_key() -> None:
    assert rank_parts("DP1 PP0 ATTN_CP2 MOE_DP3 TP5 EP7 N1") == {
        "DP": 1, "PP": 0, "ATTN_CP": 2, "MOE_DP": 3, "TP": 5, "EP": 7, "NODE": 1}
    assert dp_rank("DP12 TP12 EP12") == "DP12" and dp_rank("TP0") == ""
    assert dp_rank("MOE_DP3 TP5") == ""  # a MoE DP rank is not an attention/replica DP rank


# -- batch -----------------------------------------------------------------------------------

def test_decode_without_graph_field_is_unknown_not_off() -> None:
    line = _line("gh3243-amd-rx7900xtx-rocm-decode", "Decode batch")
    stats = parse_batch(parse_prefix(line).message)
    assert stats is not None and stats.kind == "decode"
    assert stats.cuda_graph is None and stats.running_reqs == 1 and stats.gen_throughput == 3.5


def test_pd_decode_lines_hold_their_prealloc_and_transfer_queues() -> None:
    """A PD decode node's waiting room: #prealloc-req (waiting for decode KV) and
    #transfer-req, apart from #queue-req; a prefill node's older `#prealloc-req` (its
    bootstrap queue) is not read as decode waiting."""
    line = _line("ascend-dsv32-pd-decode-64k-pool-bound-prealloc-wait", "#transfer-req: 2")
    stats = parse_batch(parse_prefix(line).message)
    assert stats is not None and stats.kind == "decode"
    assert (stats.running_reqs, stats.queue_reqs, stats.prealloc_reqs, stats.transfer_reqs,
            stats.token_usage) == (1, 0, 1, 2, 0.87)
    plain = parse_batch(parse_prefix(_line("mineru3470-rtx5090-eager-decode-v0.4.10",
                                           "Decode batch")).message)
    assert plain is not None and (plain.prealloc_reqs, plain.transfer_reqs) == (None, None)
    prefill = parse_batch(parse_prefix(_line("ascend-r1-w8a8-pd-prefill-dp2-ep16-eagle",
                                             "#prealloc-req: 10")).message)
    assert prefill is not None and prefill.kind == "prefill"
    assert prefill.prealloc_reqs is None and prefill.fields["#prealloc-req"] == "10"


def test_batch_variants_of_every_release() -> None:
    trailing = parse_batch(parse_prefix(_line("mineru3470-rtx5090-eager-decode-v0.4.10",
                                              "Decode batch")).message)
    assert trailing is not None
    assert (trailing.running_reqs, trailing.cuda_graph, trailing.queue_reqs) == (20, False, 0)
    pd = parse_batch(parse_prefix(_line("pr11854-h20-logging-config-dp-ep-mtp",
                                        "Decode batch")).message)
    assert pd is not None and (pd.accept_len, pd.retracted_reqs, pd.cuda_graph) == (
        1.93, 0, True)
    assert pd.fields["pre-allocated usage"] == "0.00"
    npu = parse_batch(parse_prefix(_line("ascend-qwen3-480b-deepep-dp4-2node-npugraph-false",
                                         "npu graph: False")).message)
    assert npu is not None and npu.cuda_graph is False and npu.running_reqs == 24
    swa = parse_batch(parse_prefix(_line("gh26248-swa-kv-full-retraction",
                                         "Decode batch")).message)
    assert swa is not None and swa.token_usage == 1.0 and swa.num_tokens == 2642688
    prefill = parse_batch(parse_prefix(_line("pr22166-tp1-healthy-mixed-batches",
                                             "Prefill batch")).message)
    assert prefill is not None and (prefill.running_reqs, prefill.input_throughput) == (
        31, 559.53)


# -- startup ---------------------------------------------------------------------------------

def test_capture_wordings() -> None:
    old_begin = parse_startup("Capture cuda graph begin. This can take up to several minutes. "
                              "avail mem=1.45 GB")
    assert old_begin is not None and (old_begin.kind, old_begin.wording) == (
        "capture_begin", "old")
    old_end = parse_startup(parse_prefix(_line("llms-in-clouds-qwq32b-4xl4-tp4-v0.4.3",
                                               "Capture cuda graph end")).message)
    assert old_end is not None and (old_end.kind, old_end.elapsed) == ("capture_end", 7.23)
    sizes = parse_startup(parse_prefix(_line("ascend-qwen3-235b-w8a8-dp16-ep16-eagle3",
                                             "Capture cuda graph bs")).message)
    assert sizes is not None and sizes.bs == (6, 8, 10, 12, 15, 18, 28, 30)
    begin_18 = parse_startup(_line("gh33483-new-capture-ceiling-vs-cap", "graph begin"))
    assert begin_18 is not None and (begin_18.phase, begin_18.wording, begin_18.bs) == (
        "target decode", "new", (1, 2, 4, 8, 12, 16, 24, 32))
    # 0.5.23 puts the sizes on the END line (cuda_graph_setup.py:757-790; docs/sglang.md §2.4).
    end_23 = parse_startup("Capture target decode CUDA graph end. bs=[1, 2, 4, 8], "
                           "elapsed=9.87 s, mem usage=1.02 GB, avail mem=16.38 GB.")
    assert end_23 is not None and (end_23.kind, end_23.bs, end_23.elapsed) == (
        "capture_end", (1, 2, 4, 8), 9.87)
    tqdm = parse_startup(_line("pr17392-dp-ep-old-capture-tqdm", "Capturing batches (bs=16"))
    assert tqdm is not None and tqdm.bs == (16,)
    assert parse_startup("Capture cuda graph failed: CUDA out of memory.") is None


def test_weights_sizing_clamps() -> None:
    weights = parse_startup(parse_prefix(_line("ascend-qwen3-235b-w8a8-dp16-ep16-eagle3",
                                               "Load weight end")).message)
    assert weights is not None and weights.kind == "weights_end" and weights.elapsed is None
    sizing = parse_startup(parse_prefix(_line("ascend-qwen3-235b-w8a8-dp16-ep16-eagle3",
                                              "max_total_num_tokens=")).message)
    assert sizing is not None and sizing.values["max_running_requests"] == 30
    assert sizing.values["chunked_prefill_size"] == -1
    reset = parse_startup(parse_prefix(_line("dgx-spark-laguna-nvfp4-startup-reset48",
                                             "Max running requests is reset")).message)
    assert reset is not None and reset.values == {"effective": 48.0}
    # kv_cache_configurator.py (0.5.20+): logger.warning("max_running_requests was reduced
    # from the requested %d to %d (per dp worker) due to the available KV cache capacity.")
    clamp = parse_startup("max_running_requests was reduced from the requested 128 to 50 "
                          "(per dp worker) due to the available KV cache capacity.")
    assert clamp is not None and clamp.values == {"requested": 128.0, "effective": 50.0}


# -- server_args -----------------------------------------------------------------------------

def test_server_args_dataclass_form_without_eval() -> None:
    message = parse_prefix(_line("dgx-spark-laguna-int4-dflash-gb10-v0.5.16",
                                 "server_args=")).message
    assert server_args_form(message) == "dataclass"
    args = parse_server_args(message)
    assert args is not None and args["model_path"]
    assert args["cuda_graph_config"]["decode"]["max_bs"] == 8
    assert decode_graph_ceiling(args) == 8 and decode_graph_disabled(args) is False


def test_server_args_old_and_dict_forms() -> None:
    old = parse_server_args(parse_prefix(_line("ascend-qwen3-235b-w8a8-dp16-ep16-eagle3",
                                               "server_args=")).message)
    assert old is not None and decode_graph_ceiling(old) == 30  # cuda_graph_bs=[6, ..., 30]
    # 0.5.23's dict repr (engine.py:1185); a value that is no literal survives as text.
    text = ("server_args={'tp_size': 1, 'cuda_graph_config': {'decode': {'backend': "
            "'disabled', 'max_bs': 256}}, 'disable_cuda_graph': False}")
    args = parse_server_args(text)
    assert args is not None and decode_graph_disabled(args) is True
    assert decode_graph_ceiling(args) is None
    odd = parse_server_args("server_args=ServerArgs(dtype=torch.bfloat16, load=<LoadFormat."
                            "AUTO: 'auto'>, tp_size=2)")
    assert odd == {"dtype": "torch.bfloat16", "load": "auto", "tp_size": 2}
    assert parse_server_args("server_args=ServerArgs(__import__('os').system('x'))") == {}


# -- crash -----------------------------------------------------------------------------------

OOM_WORDINGS = [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "RuntimeError: CUDA error: out of memory",
    "RuntimeError: HIP out of memory. Tried to allocate 1.00 GiB",
    "RuntimeError: HIP error: out of memory",
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
]


@pytest.mark.parametrize("text", OOM_WORDINGS)
def test_every_oom_wording_is_oom_and_the_catalogue_agrees(text: str) -> None:
    assert is_oom(text)
    assert default_catalogue().match_id(text) == "cuda-oom"


def test_kv_pool_exhaustion_is_not_gpu_oom() -> None:
    assert not is_oom("Prefill out of memory. Try to lower your batch size.")


def test_exception_line_of_real_tracebacks() -> None:
    lines = (REAL / "gh4547-a100-runtimeerror-cuda-oom.log").read_text("utf-8").splitlines()
    assert exception_line(lines) == "RuntimeError: CUDA error: out of memory"
    cpp = (REAL / "gh1693-v0.3-nccl-watchdog-timeout.log").read_text("utf-8").splitlines()
    found = exception_line(cpp)
    assert found is not None and found.startswith("  what():  [PG 3 Rank 5]")
    chained = ["Traceback (most recent call last):", '  File "a.py", line 1, in f',
               "KeyError: 'x'", "", "During handling of the above exception, another "
               "exception occurred:", "", "Traceback (most recent call last):",
               '  File "b.py", line 2, in g', "ValueError: boom", "with a second line"]
    assert exception_line(chained) == "ValueError: boom"


# -- metrics names, DP sums ------------------------------------------------------------------

def test_metrics_prefixes() -> None:
    assert normalise_name("sglang_num_running_reqs") == "sglang:num_running_reqs"
    page = "# TYPE sglang_token_usage gauge\nsglang_token_usage{tp_rank=\"0\"} 0.5\n"
    assert re.findall(r"sglang:\w+", normalise_text(page)) == ["sglang:token_usage"] * 2


def test_dp_ranks_sum_to_the_node() -> None:
    node = NodeBatches()
    samples = []
    for line in (REAL / "pr6081-mtp-dp-attention-accept-len.log").read_text().splitlines():
        prefix = parse_prefix(line)
        stats = parse_batch(prefix.message)
        if stats is None or stats.kind != "decode":
            continue
        sample = node.add(prefix.timestamp, dp_rank(prefix.ranks), stats.running_reqs,
                          stats.queue_reqs, stats.gen_throughput, stats.token_usage,
                          stats.cuda_graph)
        samples.append(sample)
    samples.append(node.flush())
    done = [s for s in samples if s is not None]
    per_line = max(t.running_max for t in node.tallies.values())
    assert max(s.running for s in done) > per_line  # the node runs more than any one rank
    assert len(node.tallies) > 1 and max(s.ranks for s in done) > 1
    spread = imbalance(node.tallies)
    assert spread is not None and spread.ranks == len(node.tallies)
