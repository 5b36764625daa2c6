"""`plateau report --html` never passes a host's raw control or bidi characters into the page.

A server's version string, a profile name, a flag or env value and a failed step's log are
host-written. An ESC sequence or BEL in them runs in the terminal of whoever `cat`s or greps
the file, a NUL is not HTML, and a bidi override (U+202A..U+202E, U+2066..U+2069) or mark
(U+200E/F, U+061C) reorders what the reader sees (Trojan Source, CVE-2021-42574). The test reads
the page's bytes: none of them is there, and each shows as a visible placeholder instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from console.cli import main
from console.store.db import RunStore
from tests.support.report_fixtures import store_run

ESC, BEL, NUL = "\x1b", "\x07", "\x00"
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
HOSTILE = f"v{ESC}]0;pwned{BEL}{ESC}[2J{NUL}{BIDI}0.5.23"
# C0 except tab and newline, DEL, C1, and the bidi format characters.
FORBIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f"
                       r"\u061c]")


def _page(tmp_path: Path, *, pair: bool) -> str:
    db, out = tmp_path / "runs.db", tmp_path / "report.html"
    with RunStore(db) as store:
        a = store_run(store, profile=f"prof{HOSTILE}", version=HOSTILE,
                      flags={"tp": 8, "chat-template": HOSTILE}, env={"X": HOSTILE},
                      failed_log=[f"[2026] ERROR {HOSTILE} boom"])
        runs = [a]
        if pair:
            b = store_run(store, profile=f"b{HOSTILE}", version=HOSTILE, scale=1.06,
                          started=1_767_700_000.0, flags={"tp": 8, "chat-template": "x"},
                          env={"X": "y"})
            store.save_pair(a, b, {"interleaved": True})
            runs.append(b)
    assert main(["report", *map(str, runs), "--html", str(out), "--db", str(db)]) == 0
    return out.read_bytes().decode("utf-8")


def test_a_run_report_has_no_raw_control_or_bidi_character(tmp_path: Path) -> None:
    page = _page(tmp_path, pair=False)
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(page)})
    assert found == [], found
    # Shown, not silently dropped: NUL as its control picture, the bidi characters as U+FFFD.
    assert "\u2400" + "\ufffd" * len(BIDI) + "0.5.23" in page
    assert "pwned" not in page


def test_an_ab_report_has_no_raw_control_or_bidi_character(tmp_path: Path) -> None:
    page = _page(tmp_path, pair=True)
    found = sorted({f"U+{ord(c):04X}" for c in FORBIDDEN.findall(page)})
    assert found == [], found
    assert "<h2>A/B: run 2: bv\u2400" in page
