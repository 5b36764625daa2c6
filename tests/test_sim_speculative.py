"""The simulator's speculative decoding: SGLang 0.5.23's resolution of the speculative flags,
verify graphs over the speculative default ladder, padded rows of the verify width, and each
request keeping an accept length per step, written in the real logs' wording and read back by
Plateau's own ladder reader. Sweeps run on the simulator's virtual clock
(tests/support/virtual_sweep.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from console.config_models import SweepPreset
from console.logs.ladder import LadderReader
from console.logs.ladder_text import ladder_lines
from console.sglang.batch import parse_batch
from console.sglang.graph_ladder import default_decode_ladder, padded_size
from console.sglang.prefix import parse_prefix
from console.sglang.startup import StartupLine, parse_startup
from console.sim.args import parse
from console.sim.config import SimConfig, resolve
from console.sim.speculative import SPEC_ACCEPT_LEN
from tests.support.virtual_sweep import virtual_sweep

REAL = Path(__file__).parent / "data" / "logs" / "real"
# A real 0.5.x speculative Decode line (EAGLE3, 3 steps, topk 1, 4 draft tokens) and a real
# verify capture (DFLASH on 0.5.16, which prints the sizes on the begin line as 0.5.18 does).
REAL_DECODE = REAL / "ascend-qwen3-30b-w8a8-tp2-eagle3-bs192.log"
REAL_CAPTURE = REAL / "dgx-spark-laguna-int4-dflash-gb10-v0.5.16.log"
SPEC: dict[str, str | int | bool] = {"speculative-algorithm": "EAGLE3",
                                     "cuda-graph-max-bs-decode": 32, "decode-log-interval": 10}
LEVELS = SweepPreset(concurrency=[16, 40], input_len=64, output_len=64,
                     prompts_per_concurrency=16)


def _cfg(*argv: str) -> SimConfig:
    args, sim, sglang_argv = parse(["--model-path", "m", *argv])
    return resolve(args, sim, sglang_argv)


def _sweep_log(tmp: Path, flags: dict[str, str | int | bool]) -> str:
    return virtual_sweep(flags, LEVELS, tmp=tmp).log


@pytest.fixture(scope="module")
def spec_log(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _sweep_log(tmp_path_factory.mktemp("spec"), SPEC)


def test_only_the_algorithm_resolves_as_sglang_0_5_23() -> None:
    llama = _cfg("--speculative-algorithm", "nextn")  # the sim's default arch: Llama
    sa = llama.server_args
    assert (sa["speculative_algorithm"], sa["speculative_num_steps"],
            sa["speculative_eagle_topk"], sa["speculative_num_draft_tokens"]) == ("EAGLE", 5, 4, 8)
    assert sa["max_running_requests"] == 48 and llama.spec_running_reset
    assert llama.profile.verify_tokens == 8 and llama.profile.speculative
    deepseek = _cfg("--speculative-algorithm", "EAGLE3", "--sim-arch", "DeepseekV3ForCausalLM",
                    "--max-running-requests", "64")
    sa = deepseek.server_args
    assert (sa["speculative_num_steps"], sa["speculative_eagle_topk"],
            sa["speculative_num_draft_tokens"]) == (3, 1, 4)
    assert sa["max_running_requests"] == 64 and not deepseek.spec_running_reset
    # topk 1: the draft tokens are steps + 1, whatever was asked (speculative_hook.py:1256-1266)
    asked = _cfg("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2",
                 "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "7")
    assert asked.server_args["speculative_num_draft_tokens"] == 3
    plain = _cfg()
    assert plain.speculative is None and plain.profile.verify_tokens == 1


def test_an_unmodelled_algorithm_is_a_one_line_error() -> None:
    done = subprocess.run([sys.executable, "-m", "console.sim", "--model-path", "m",
                           "--speculative-algorithm", "DFLASH"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: the simulator models EAGLE, EAGLE3, NEXTN and STANDALONE speculative "
        "decoding, not DFLASH"]


def test_padded_verify_rows_are_the_captured_size_times_the_width() -> None:
    spec = _cfg("--speculative-algorithm", "EAGLE3", "--cuda-graph-max-bs-decode", "64").profile
    plain = _cfg("--cuda-graph-max-bs-decode", "64").profile
    assert spec.decode_ladder == default_decode_ladder(64, speculative=True)
    # A batch of 9 runs the 10 verify graph (finer steps below 64) but the 12 decode graph.
    assert (spec.graph_rows(9), plain.graph_rows(9)) == (10, 12)
    ratio = spec.decode_parts(9, 0)["compute"] / plain.decode_parts(9, 0)["compute"]
    assert ratio == pytest.approx(10 * spec.verify_tokens / 12)
    # A mixed prefill step decodes its riders one token each, verify width or not.
    mixed = spec.decode_parts(9, 0, tokens_per_req=1)["compute"]
    assert mixed * spec.verify_tokens == pytest.approx(spec.decode_parts(9, 0)["compute"])
    assert spec.graph_gb > plain.graph_gb  # the verify graphs hold 8 tokens per request


def test_the_ladder_reader_sees_tokens_per_step_against_the_verify_ladder(spec_log: str) -> None:
    reader = LadderReader()
    reader.feed_text(spec_log)
    ladder = reader.result()
    width = _cfg("--speculative-algorithm", "EAGLE3").profile.verify_tokens
    assert ladder.speculative and ladder.tokens_per_req == width == 8
    assert ladder.ladder == default_decode_ladder(32, speculative=True)
    bins = {b.batch: b for b in ladder.histogram}
    assert {16, 40} <= set(bins)
    # Tokens per step, batch x width, against the captured sizes x width: 16 requests fill the
    # 16 graph (128 tokens); 40 are above the 32 ceiling and run eagerly.
    assert bins[16].runs == 16 and bins[16].graph and not bins[16].eager
    assert bins[16].batch * width == (padded_size(16, ladder.ladder) or 0) * width == 128
    assert bins[40].runs is None and bins[40].eager and not bins[40].graph
    assert "8 tokens per request (verify)" in ladder_lines(ladder)[0]


def test_accept_length_raises_output_tokens_per_step(tmp_path: Path, spec_log: str) -> None:
    plain_log = _sweep_log(tmp_path, {k: v for k, v in SPEC.items()
                                      if k != "speculative-algorithm"})

    def decode_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if "Decode batch" in line]

    # The same requests and output lengths: every Decode line is 10 steps, so fewer lines is
    # fewer steps for the same output tokens, by about the accept length.
    ratio = len(decode_lines(plain_log)) / len(decode_lines(spec_log))
    assert 0.8 * SPEC_ACCEPT_LEN < ratio < 1.2 * SPEC_ACCEPT_LEN
    stats = [parse_batch(parse_prefix(line).message) for line in decode_lines(spec_log)]
    lengths = [s.accept_len for s in stats if s is not None and s.accept_len is not None]
    assert len(lengths) == len(stats)
    assert sum(lengths) / len(lengths) == pytest.approx(SPEC_ACCEPT_LEN, abs=0.05)
    assert all(1.0 <= length <= 4 for length in lengths)  # EAGLE3 on Llama: 5 steps + 1


def _first(text: str, needle: str) -> str:
    return parse_prefix(next(line for line in text.splitlines() if needle in line)).message


def test_the_decode_line_has_the_real_speculative_shape(spec_log: str) -> None:
    sim = parse_batch(_first(spec_log, "accept len"))
    real = parse_batch(_first(REAL_DECODE.read_text(), "accept len"))
    assert sim is not None and real is not None
    # The same fields in the same order; the device's graph label differs (NPU: cpu graph).
    assert [k.replace("cpu graph", "cuda graph") for k in real.fields] == list(sim.fields)
    for stats in (sim, real):
        assert stats.kind == "decode" and stats.accept_len and stats.accept_rate is not None


def _shape(line: StartupLine | None) -> tuple[object, ...]:
    assert line is not None
    return line.kind, line.phase, line.wording, sorted(line.values), line.bs is not None


def test_the_verify_capture_lines_have_the_real_shape(tmp_path: Path) -> None:
    # 0.5.18 prints the sizes on the begin line, as the real 0.5.16 log does.
    log = _sweep_log(tmp_path, {**SPEC, "sim-sglang-version": "0.5.18"})
    real = REAL_CAPTURE.read_text()
    for edge in ("begin", "end"):
        needle = f"Capture target verify CUDA graph {edge}"
        assert _shape(parse_startup(_first(log, needle))) == _shape(
            parse_startup(_first(real, needle)))
    begin = parse_startup(_first(log, "Capture target verify CUDA graph begin"))
    assert begin is not None and begin.values["tokens_per_req"] == 8
    assert begin.bs == tuple(default_decode_ladder(32, speculative=True))
