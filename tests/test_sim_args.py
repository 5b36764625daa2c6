"""The simulator's command line mimics SGLang 0.5.23's parser (docs/sglang.md §0, §1,
Appendix A)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.sim.args import build_sglang_parser, option_rows, parse, split_sim_argv
from console.sim.config import resolve

ROOT = Path(__file__).resolve().parents[1]
# The SGLang 0.5.23 reference, kept in the repository (a copy of shared/reference/).
REFERENCE = ROOT / "docs" / "sglang.md"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "console.sim", *args], capture_output=True,
                          text=True, timeout=30, cwd=ROOT, env=env)


def test_all_531_options_with_exact_choices() -> None:
    rows = option_rows()
    assert len(rows) == 531
    by_name = {r["names"][0]: r for r in rows}
    assert by_name["--moe-runner-backend"]["choices"][:4] == ["auto", "deep_gemm", "triton",
                                                              "triton_kernel"]
    assert "flashmla_sparse" in by_name["--dsa-decode-backend"]["choices"]
    assert by_name["--fp4-gemm-backend"]["choices"] == [
        "auto", "flashinfer_cudnn", "flashinfer_cutedsl", "flashinfer_cutlass",
        "flashinfer_trtllm", "marlin"]
    assert "--nsa-decode-backend" not in by_name


def test_options_file_matches_reference() -> None:
    from console.sim._gen_options import parse_appendix_a

    fresh = parse_appendix_a(REFERENCE.read_text())
    assert [r["names"] for r in fresh] == [r["names"] for r in option_rows()]


def test_abbreviations_and_aliases() -> None:
    args, sim, _ = parse(["--model", "m", "--tp", "8", "--dp", "2", "--ep", "8",
                          "--sim-seed", "7", "--sim-num-gpus=4"])
    assert (args.model_path, args.tp_size, args.dp_size, args.ep_size) == ("m", 8, 2, 8)
    assert sim.seed == 7 and sim.num_gpus == 4
    assert args.host == "127.0.0.1" and args.port == 30000
    assert args.decode_log_interval == 40


def test_sim_flags_do_not_leak_into_sglang_parser() -> None:
    sim, rest = split_sim_argv(["--model-path", "m", "--sim-speed", "3", "--tp", "2",
                                "--sim-help"])
    assert sim == ["--sim-speed", "3", "--sim-help"]
    assert rest == ["--model-path", "m", "--tp", "2"]
    help_text = build_sglang_parser().format_help()
    assert "--sim-" not in help_text


def test_unknown_flag_exits_2_like_sglang() -> None:
    proc = _run("--model-path", "m", "--nsa-decode-backend", "flashmla_sparse")
    assert proc.returncode == 2
    assert "sglang serve: error: unrecognized arguments: --nsa-decode-backend" in proc.stderr


def test_ambiguous_and_invalid_choice() -> None:
    proc = _run("--model-path", "m", "--cuda-graph-max-bs", "8")
    assert proc.returncode == 2
    assert ("ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
            "--cuda-graph-max-bs-prefill") in proc.stderr
    proc = _run("--model-path", "m", "--attention-backend", "bogus")
    assert proc.returncode == 2
    assert "argument --attention-backend: invalid choice: 'bogus'" in proc.stderr
    proc = _run("--port", "1")
    assert proc.returncode == 2
    assert "the following arguments are required: --model-path/--model" in proc.stderr


def test_help_lists_choices_like_sglang() -> None:
    proc = _run("--help")
    assert proc.returncode == 0
    out = proc.stdout
    assert out.startswith("usage: sglang serve [-h] --model-path MODEL_PATH")
    assert "  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE\n" in out
    assert "  --ep-size EP_SIZE, --expert-parallel-size EP_SIZE, --ep EP_SIZE\n" in out
    assert ("  --moe-runner-backend {auto,deep_gemm,triton,triton_kernel,flashinfer_trtllm,"
            in out)
    assert "  --kv-cache-dtype {auto,fp8_e5m2,fp8_e4m3,mxfp8,bf16,bfloat16,nvfp4,fp4_mx_block16}" \
        in out
    assert "--sim-seed" not in out
    sim_help = _run("--sim-help")
    assert "--sim-ideal-ttft-ms" in sim_help.stdout and sim_help.returncode == 0


def test_resolution_of_auto_values() -> None:
    args, sim, argv = parse(["--model-path", "m"])
    cfg = resolve(args, sim, argv)
    sa = cfg.server_args
    assert sa["chunked_prefill_size"] == 8192  # 96 GB class GPU (docs/sglang.md §1.6)
    assert sa["cuda_graph_max_bs_decode"] == 256
    assert 0.8 < sa["mem_fraction_static"] < 0.9
    assert sa["served_model_name"] == "m"
    args, sim, argv = parse(["--model-path", "m", "--tp", "8", "--max-running-requests", "64"])
    cfg = resolve(args, sim, argv)
    assert cfg.server_args["cuda_graph_max_bs_decode"] == 64
    assert cfg.rank_prefix == " TP0"
    assert cfg.max_running_requests == 64


def test_deprecated_flag_warns_but_parses(capsys: pytest.CaptureFixture[str]) -> None:
    args, _, _ = parse(["--model-path", "m", "--disable-cuda-graph"])
    assert args.disable_cuda_graph is True
    assert "'--disable-cuda-graph' is deprecated" in capsys.readouterr().err


def test_plateau_sim_subcommand_passes_args_through() -> None:
    proc = subprocess.run([sys.executable, "-m", "console.cli", "sim", "--model-path", "m",
                           "--nsa-prefill-backend", "x"], capture_output=True, text=True,
                          timeout=30, cwd=ROOT)
    assert proc.returncode == 2
    assert "unrecognized arguments: --nsa-prefill-backend x" in proc.stderr
