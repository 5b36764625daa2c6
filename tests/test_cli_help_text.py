"""Help that helps: `plateau sim --help` leads with the sim's own options and points to
SGLang's full list; `snapshot --help` says what --until waits for (issue 17, item 8)."""

from __future__ import annotations

import pytest

from console.cli import main


def test_sim_help_leads_with_the_sims_own_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sim", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: plateau sim [SGLANG FLAGS...] [--sim-* OPTIONS]")
    assert "--sim-seed" in out and "--sim-startup-seconds" in out
    assert "--moe-runner-backend" in out  # the SGLang flags the model reacts to, in words
    assert "All 531 SGLang 0.5.23 flags: plateau sim --sglang-help" in out
    assert len(out.splitlines()) < 80  # was 1,000+ lines headed "sglang serve"


def test_sim_sglang_help_is_the_full_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["sim", "--sglang-help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: sglang serve") and len(out.splitlines()) > 900


def test_snapshot_help_explains_until(capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["snapshot", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "…" not in out
    assert "capture when the server is ready, or run a sweep (--preset) and capture when it " \
           "is done" in out
