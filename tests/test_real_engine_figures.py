"""docs/real-engine.md quotes the H200's interleaved client pairs: the table there is the one
tests/bench/real_engine/client_pairs.py computes from the stored raw files, row for row."""

from __future__ import annotations

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
