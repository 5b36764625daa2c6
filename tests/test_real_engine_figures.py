"""docs/real-engine.md quotes the H200's interleaved client pairs: the table there is the one
tests/bench/real_engine/client_pairs.py computes from the stored raw files, row for row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests" / "data" / "engines" / "transformers-serve" / "h200-rig" / "client-pairs"


def test_the_documented_client_pairs_are_the_stored_runs() -> None:
    script = ROOT / "tests" / "bench" / "real_engine" / "client_pairs.py"
    computed = subprocess.run(
        [sys.executable, str(script), str(PAIRS)],
        capture_output=True, text=True, check=True, timeout=60).stdout
    rows = [line for line in computed.splitlines() if line.startswith("| ") and "%" in line]
    assert len(rows) == 5  # five pairs ran inside the command's 10 minutes
    doc = (ROOT / "docs" / "real-engine.md").read_text()
    for row in rows:
        assert row in doc, row
    median = computed.strip().splitlines()[-1].split("; ")[1]  # "median +3.7%"
    assert median.startswith("median ") and median in doc


def test_the_documented_warm_up_and_boot_floor_are_the_stored_runs() -> None:
    folder = PAIRS.parent / "warmup-aa"
    doc = " ".join((ROOT / "docs" / "real-engine.md").read_text().split())
    warm = json.loads((folder / "sweep_warm.json").read_text())["steps"][0]["metrics"]
    load = warm["warmup_load"]
    assert load["detected"] and not load["converged"]
    assert f"{load['requests']} requests, {load['seconds']:.1f} s" in doc
    assert f"median TPOT {load['warm_tpot_ms']:.1f} ms in the first round" in doc
    assert f"{load['steady_tpot_ms']:.1f} ms in the last" in doc
    assert f"{warm['total_tok_s']:,.1f} total tok/s at c=8" in doc
    floor = json.loads((folder / "aa.json").read_text())["boot_floor"]["levels"][0]
    assert floor["boots"] == 4 and f"±{floor['sd_pct']:.1f}% (sd)" in doc
