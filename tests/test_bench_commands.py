"""`plateau sweep` (config HOST through a port forward, --url, --json), `history`, `compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from tests.support.cli_hosts import write_local_ideal_config
from tests.support.sim_fixtures import SimProcess


def _config(tmp_path: Path, port: int) -> Path:
    return write_local_ideal_config(tmp_path / "plateau.toml", port)


def test_sweep_config_host_then_history_and_compare(
    ideal_sim: SimProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, ideal_sim.port)
    db = str(tmp_path / "h.db")
    assert main(["--config", str(config), "sweep", "box", "--preset", "tiny", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "output tok/s" in out and "total tok/s" in out
    assert "stored as run 1 (finished)" in out
    assert main(["sweep", "--url", ideal_sim.base_url, "--concurrency", "1,2", "--input-len",
                 "16", "--output-len", "8", "--num-prompts", "4", "--json", "--db", db,
                 "--label", "second"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert data["run_id"] == 2 and [s["concurrency"] for s in data["steps"]] == [1, 2]
    assert all(s["metrics"]["completed"] == 4 for s in data["steps"])

    assert main(["history", "--json", "--db", db]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in runs] == [2, 1]
    assert runs[1]["meta"]["host"] == "box" and runs[1]["meta"]["profile"] == "ideal"
    assert runs[1]["meta"]["flags"] == {"tp": 1}
    assert runs[1]["meta"]["server_url"].startswith("http://127.0.0.1:")

    assert main(["compare", "1", "2", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "A total tok/s" in out and "\u0394%" in out
    assert "noise unknown" in out

    assert main(["history", "--export", "1", "--format", "csv", "--db", db]) == 0
    assert capsys.readouterr().out.startswith("step,concurrency,repeat,status")


def test_sweep_needs_exactly_one_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", "--concurrency", "1"]) == 2
    assert "--demo, a HOST" in capsys.readouterr().err


def test_bad_values_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--url", "http://127.0.0.1:9", "--input-len", "0",
                 "--db", str(tmp_path / "x.db")])  # fmt: skip
    assert code == 2 and "--input-len: must be at least 1" in capsys.readouterr().err
    assert main(["compare", "1", "2", "--db", str(tmp_path / "x.db")]) == 2


@pytest.mark.slow
def test_sweep_demo_starts_the_chosen_profile_and_stops_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "demo.db")
    code = main(["sweep", "--demo", "--profile", "triton-moe", "--concurrency", "1,2",
                 "--input-len", "16", "--output-len", "4", "--num-prompts", "2", "--json",
                 "--db", db])  # fmt: skip
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["status"] for s in data["steps"]] == ["ok", "ok"]
    assert main(["history", "--json", "--db", db]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert run["meta"]["host"] == "demo" and run["meta"]["profile"] == "triton-moe"
    assert run["meta"]["flags"]["moe-runner-backend"] == "triton"
    assert run["meta"]["server_version"] == "0.5.23"
    port = int(run["meta"]["server_url"].rsplit(":", 1)[1])
    import socket

    with socket.socket() as sock:  # the simulator is gone: its port is free again
        sock.bind(("127.0.0.1", port))
    # The sweep's diagnosis, and the same again from the evidence stored with the run.
    assert data["diagnosis"]["knee"]["kind"] in ("saturates", "declines", "scaling")
    moe = next(c for c in data["diagnosis"]["causes"] if c["id"] == "moe-untuned")
    assert moe["suggest"]["flags"] == {"moe-runner-backend": "cutlass"}
    assert main(["diagnose", str(run["id"]), "--json", "--db", db]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["evidence_stored"] and {"log", "gpu"} <= set(again["diagnosis"]["sources"])
    assert [c["id"] for c in again["diagnosis"]["causes"]] == [
        c["id"] for c in data["diagnosis"]["causes"]]
