"""CLI errors that say what to do (issue 26, item 9): a subcommand's mistake is its own one line
with a did-you-mean; an unknown word is "unknown command or host"; a dead --url stores nothing;
a recording that never connected fails; `ab --help` says 95%; `ab --a X --b X` is an A/A."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.bench.verdict import judge
from console.cli import COMMANDS, main
from console.store.db import RunStore
from tests.support.bench_fixtures import fake_step

Capture = pytest.CaptureFixture[str]


def _err(capsys: Capture) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_typo_in_a_subcommand_flag_is_one_line_naming_that_subcommand(
    capsys: Capture
) -> None:
    """One line, the subcommand's (not the top level's), with its did-you-mean and where the
    usage is; no usage block above it (issue 41: the README promises one line; issue 26 had
    put the 18-line block there)."""
    assert main(["sweep", "--url", "http://127.0.0.1:1", "--concurency", "4"]) == 2
    *usage, last = _err(capsys).splitlines()
    assert usage == []
    assert last.startswith("plateau sweep: error: unrecognized argument(s) '--concurency'")
    assert "(did you mean --concurrency?)" in last and "`plateau sweep --help`" in last


def test_a_typo_after_a_positional_is_the_commands_one_line(capsys: Capture) -> None:
    assert main(["server", "status", "--dmeo"]) == 2
    *usage, last = _err(capsys).splitlines()
    assert usage == []
    assert last.startswith("plateau server: error: unrecognized argument(s) '--dmeo'")
    assert "(did you mean --demo?)" in last


def test_a_positional_word_for_an_option_gets_the_option(capsys: Capture) -> None:
    assert main(["history", "show", "3"]) == 2
    *usage, last = _err(capsys).splitlines()
    assert usage == []
    assert last.startswith("plateau history: error:") and "(did you mean --show?)" in last


def test_a_bad_concurrency_list_is_one_line(capsys: Capture) -> None:
    assert main(["sweep", "--url", "http://127.0.0.1:1", "--concurrency", "4,x"]) == 2
    err = _err(capsys)
    assert err.count("\n") == 1, err
    assert "argument --concurrency: expected numbers like 1,2,4: '4,x'" in err


@pytest.mark.parametrize("argv,hint", [(["zzz", "--help"], ""), (["nosuch"], ""),
                                       (["swep"], " (did you mean sweep?)"),
                                       (["bx"], " (did you mean box?)")])
def test_an_unknown_word_is_an_unknown_command_or_host(
    tmp_path: Path, capsys: Capture, argv: list[str], hint: str
) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[hosts]]\nname = "box"\nlocal = true\n')
    assert main(["--config", str(config), *argv]) == 2
    err = _err(capsys)
    assert err.startswith(f"plateau: unknown command or host {argv[0]!r}{hint};"), err
    assert err.count("\n") == 1 and "usage: plateau console" not in err


def test_sweep_of_a_dead_url_checks_first_and_stores_nothing(tmp_path: Path,
                                                             capsys: Capture) -> None:
    db = tmp_path / "h.db"
    argv = ["sweep", "--url", "http://127.0.0.1:1", "--concurrency", "1,2", "--input-len", "8",
            "--output-len", "4", "--num-prompts", "1", "--db", str(db)]
    assert main(argv) == 1
    err = _err(capsys)
    assert err.startswith("plateau: no server answers at http://127.0.0.1:1 (ConnectError")
    assert "nothing was run or stored" in err and err.count("\n") == 1
    assert "no clear cause" not in err
    if db.exists():
        with RunStore(db) as store:
            assert store.list_runs(10) == []


def test_record_of_an_unreachable_host_exits_nonzero(tmp_path: Path, capsys: Capture) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[[hosts]]\nname = "far"\naddress = "127.0.0.1"\nport = 1\n'
                      'user = "nobody"\n')
    out = tmp_path / "rec.jsonl"
    assert main(["--config", str(config), "record", "far", "--out", str(out),
                 "--seconds", "3"]) == 1
    err = _err(capsys)
    assert "plateau: never connected to far: cannot connect to 127.0.0.1:1" in err, err


def test_ab_help_says_95_percent(capsys: Capture) -> None:
    assert main(["ab", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(95% confidence)" in out and "%%" not in out
    assert "A/A" in out


def test_ab_allows_the_same_profile_on_both_sides(capsys: Capture) -> None:
    """An A/A gets as far as the next check (the repeats), not "must be different"."""
    assert main(["ab", "--demo", "--a", "triton-moe", "--b", "triton-moe",
                 "--repeats", "0"]) == 2
    err = _err(capsys)
    assert "--repeats must be from 1 to 20" in err and "different" not in err


def test_an_aa_verdict_says_within_noise() -> None:
    from console.commands.ab import aa_sentence

    a = [fake_step(c, 100.0 * c * (1 + r / 200), index=2 * i + r, repeat=r)
         for i, c in enumerate((16, 32, 64)) for r in range(3)]
    b = [fake_step(c, 100.0 * c * (1 + (2 - r) / 200), index=2 * i + r, repeat=r)
         for i, c in enumerate((16, 32, 64)) for r in range(3)]
    verdict = judge(a, b)
    line = aa_sentence(verdict.knee_word, verdict.sentence)
    assert verdict.knee_word == "within noise"
    assert line.startswith("A/A noise check: the same profile twice is within noise (")
    drift = aa_sentence("real", "B +9.0% ± 2.0% at 64: real")
    assert "beyond the noise estimate" in drift and "within noise" not in drift


# `plateau sim` hands its words to the simulator, which answers as `sglang serve` would.
@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"sim"}))
def test_every_commands_usage_error_is_one_line(command: str, capsys: Capture) -> None:
    """README: "Errors exit non-zero with one line." (the usage block was 18 lines for sweep)"""
    assert main([command, "--no-such-option"]) == 2
    err = _err(capsys)
    assert err.count("\n") == 1 and f"plateau {command}: error: " in err, err
