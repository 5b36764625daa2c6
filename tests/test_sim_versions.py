"""The simulator plays a chosen SGLang version: that release's flags (its own argparse
parser) and its log line shapes, checked against real logs of that release family.

Real logs (tests/data/logs/real/, each with its source in INDEX of the corpus): 0.4.10.post2
(MinerU issue 3470), 0.5.16 (DGX Spark log, the nearest stated release to 0.5.18: same
`ServerArgs(...)` repr, `Init torch distributed`, per-phase capture lines), sglang#33483
(decode capture with the sizes on the begin line, 0.5.18's shape) and club-3090 issue 1261
(0.5.2x prefill capture wording). Values differ; shapes must not.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console.sglang.effective import describe, read_effective, requested_vs_effective
from console.sglang.flags import flag_name, graph_max_bs_flag, takes, translate
from console.sglang.versions import Version, traits_for

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "logs" / "real"
PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z]+\d+)*\] ")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?|\b(?:True|False)\b")
LIST = re.compile(r"\[N(?:, N)*\]")
TYPE = re.compile(r"type=\w+")


def _shape(line: str) -> str:
    """A line with its prefix dropped and every value replaced: what must match."""
    text = PREFIX.sub("", line.rstrip())
    text = TYPE.sub("type=ARCH", NUMBER.sub("N", text))
    return LIST.sub("[N...]", text).rstrip(", ")


def _first(lines: list[str], needle: str) -> str:
    found = next((line for line in lines if needle in line), None)
    assert found is not None, f"no line with {needle!r}"
    return found


def _real(name: str) -> list[str]:
    return (REAL / name).read_text(encoding="utf-8").splitlines()


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console.sim", *args], capture_output=True,
                          text=True, timeout=30, cwd=ROOT, env={**os.environ, "COLUMNS": "100"})


# ------------------------------------------------------------------------------ flags


def test_each_version_parses_its_own_flags() -> None:
    new = _run("--model", "m", "--cuda-graph-max-bs", "24")  # 0.5.23: a prefix of two flags
    assert new.returncode == 2
    assert ("sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
            "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill") in new.stderr
    old = _run("--model", "m", "--cuda-graph-max-bs-decode", "24", "--sim-sglang-version",
               "0.4.10")
    assert old.returncode == 2
    assert "launch_server.py: error: unrecognized arguments: --cuda-graph-max-bs-decode 24" \
        in old.stderr
    help_text = _run("--help", "--sim-sglang-version", "0.5.18").stdout
    assert "--cuda-graph-max-bs-decode" in help_text and "--cuda-graph-max-bs " in help_text


def test_0_5_18_takes_the_old_name_as_a_deprecated_alias() -> None:
    from console.sim.args import parse

    args, sim, _ = parse(["--model", "m", "--cuda-graph-max-bs", "24",
                          "--sim-sglang-version", "0.5.18"])
    assert sim.sglang_version == "0.5.18" and args.cuda_graph_max_bs_decode == 24
    args, _, _ = parse(["--model", "m", "--tp-size", "2", "--cuda-graph-max-bs", "8",
                        "--sim-sglang-version", "0.4.10"])
    assert args.cuda_graph_max_bs == 8 and args.tensor_parallel_size == 2


@pytest.mark.parametrize(("flag", "value", "version", "expected"), [
    ("cuda-graph-max-bs", "24", "0.5.23", (("--cuda-graph-max-bs-decode", "24"),)),
    ("cuda-graph-max-bs", "24", "0.5.18", (("--cuda-graph-max-bs-decode", "24"),)),
    ("cuda-graph-max-bs", "24", "0.4.10", (("--cuda-graph-max-bs", "24"),)),
    ("cuda-graph-max-bs-decode", "24", "0.4.10", (("--cuda-graph-max-bs", "24"),)),
    ("cuda-graph-backend-decode", "disabled", "0.4.10", (("--disable-cuda-graph", None),)),
    ("tp-size", "2", "0.5.23", (("--tp-size", "2"),)),
])
def test_translate(flag: str, value: str, version: str, expected: Any) -> None:
    result = translate(flag, value, version)
    assert not result.refused and result.flags == expected
    assert bool(result.note) == (expected[0][0] != f"--{flag}")


def test_refused_names_the_new_flag() -> None:
    result = translate("enforce-piecewise-cuda-graph", None, "0.5.23")
    assert result.refused.startswith("SGLang 0.5.23 has no --enforce-piecewise-cuda-graph")
    assert translate("attn-dp-size", "2", "0.4.10").refused
    assert not takes("--cuda-graph-max-bs", "0.5.23") and takes("--cuda-graph-max-bs", "0.5.18")


def test_suggestions_use_the_host_versions_names() -> None:
    assert graph_max_bs_flag("0.4.10") == "--cuda-graph-max-bs"
    assert graph_max_bs_flag("0.5.18") == graph_max_bs_flag(None) == "--cuda-graph-max-bs-decode"
    assert flag_name("cuda-graph-max-bs-decode", "0.4.10.post2") == "--cuda-graph-max-bs"
    assert traits_for("0.5.20").version == "0.5.18" and traits_for("0.3.0").version == "0.4.10"
    assert Version.parse("v0.5.23.post1") == Version(0, 5, 23)


# ------------------------------------------------------------------------------ shapes


STARTUP_NEEDLES = ("Init torch distributed ends", "Load weight end", "KV Cache is allocated",
                   "Capture target prefill CUDA graph end", "max_total_num_tokens=")


def _assert_same_shapes(sim: list[str], real: list[str], needles: tuple[str, ...]) -> None:
    for needle in needles:
        assert _shape(_first(sim, needle)) == _shape(_first(real, needle)), needle


def _startup(sim_factory: Any, version: str, *extra: str) -> list[str]:
    sim = sim_factory("--sim-sglang-version", version, "--decode-log-interval", "1", *extra)
    return str(sim.log_text()).splitlines()


def test_0_5_18_shapes_match_real_0_5_x_logs(sim_factory: Any) -> None:
    lines = _startup(sim_factory, "0.5.18")
    dgx = _real("dgx-spark-laguna-int4-dflash-gb10-v0.5.16.log")
    _assert_same_shapes(lines, dgx, ("Init torch distributed ends", "KV Cache is allocated",
                                     "Capture target prefill CUDA graph end",
                                     "max_total_num_tokens="))
    # the real log's weights carry a quantization field; the sim's unquantised model not
    assert _shape(_first(lines, "Load weight end")) == _shape(
        _first(dgx, "Load weight end").replace("quant=compressed-tensors, ", ""))
    assert _first(lines, "server_args=").split("server_args=")[1].startswith("ServerArgs(")
    assert "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', max_bs=" \
        in _first(lines, "server_args=")
    issue = _real("gh33483-new-capture-ceiling-vs-cap.log")  # sizes on the begin line
    for needle in ("Capture target decode CUDA graph begin",
                   "Capture target decode CUDA graph end"):
        # two lines fused in the issue's paste, losing the end line's final "." (0.5.18
        # cuda_graph_setup.py writes "avail mem={after_mem:.2f} GB.")
        real = _first(issue, needle).split(" max_total_num_tokens=")[0]
        assert _shape(_first(lines, needle)).rstrip(".") == _shape(real).rstrip("."), needle
    assert "Init parallel" not in "\n".join(lines)


def test_0_5_23_shapes(sim_factory: Any) -> None:
    lines = _startup(sim_factory, "0.5.23")
    club = _real("club3090-2x5090-new-capture-prefill.log")
    assert _shape(_first(lines, "Capture target prefill CUDA graph begin")) == _shape(
        _first(club, "Capture target prefill CUDA graph begin"))
    end = _first(lines, "Capture target decode CUDA graph end")
    assert _shape(end).startswith("Capture target decode CUDA graph end. bs=[N...], elapsed=N s")
    assert "bs=[" not in _first(lines, "Capture target decode CUDA graph begin")
    assert _first(lines, "Init parallel ends").endswith(" s")
    assert _first(lines, "server_args=").split("server_args=")[1].startswith("{")
    assert "Freezing GC" not in "\n".join(lines)  # 0.5.23 writes it at DEBUG


def test_0_4_10_shapes_match_a_real_0_4_10_log(sim_factory: Any) -> None:
    import httpx

    sim = sim_factory("--sim-sglang-version", "0.4.10", "--decode-log-interval", "1")
    httpx.post(f"{sim.base_url}/generate", json={
        "text": "hello", "sampling_params": {"max_new_tokens": 4, "ignore_eos": True}},
        timeout=30)
    lines = str(sim.log_text()).splitlines()
    real = _real("mineru3470-rtx5090-eager-decode-v0.4.10.log")
    assert _shape(_first(lines, "Decode batch.")) == _shape(_first(real, "Decode batch."))
    assert _first(lines, "Decode batch.").endswith("#queue-req: 0, ")
    assert "Capture cuda graph begin. This can take up to several minutes." in "\n".join(lines)
    assert _shape(_first(lines, "Capture cuda graph end")) == (
        "Capture cuda graph end. Time elapsed: N s. mem usage=N GB. avail mem=N GB.")
    info = httpx.get(f"{sim.base_url}/server_info", timeout=10).json()
    assert info["version"] == "0.4.10" and isinstance(info["cuda_graph_max_bs"], int)


# ------------------------------------------------------------------------------ effective


def test_requested_vs_effective_from_the_sims_own_lines(sim_factory: Any) -> None:
    """SGLang cuts --max-running-requests to the KV pool and picks the graph ceiling and the
    chunk size from the GPU memory; the reader finds all three in the startup lines."""
    sim = sim_factory("--max-running-requests", "1000000", "--sim-sglang-version", "0.5.18")
    lines = str(sim.log_text()).splitlines()
    effective = read_effective(lines)
    reduced = _first(lines, "max_running_requests was reduced from the requested 1000000 to ")
    cap = int(reduced.split(" to ")[1].split(" ")[0])
    assert effective.running_reduced_from == 1000000 and effective.max_running_requests == cap
    flags = {"max-running-requests": 1000000}
    shown = requested_vs_effective(flags, effective)
    assert shown["max-running-requests"] == (1000000, cap)
    assert shown["cuda-graph-max-bs-decode"][0] is None  # not asked: SGLang chose
    assert effective.cuda_graph_max_bs == max(effective.capture_bs) > 0
    assert describe("max-running-requests", 1000000, cap) == \
        f"--max-running-requests 1000000 \u2192 {cap}"
