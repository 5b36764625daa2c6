"""An upgrade A/B (issue 40): one profile's flags on two installs of SGLang, here the
simulator playing 0.5.18 and 0.5.23 (`installs` in the profile), end to end through
`plateau ab HOST --a P@0.5.18 --b P@0.5.23`: each side's flags translated to its install's
names (the CUDA-graph refactor's rename), interleaved fresh boots, a verdict, and what
differed (the versions as the servers reported them, the flags as launched)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from console.cli import main
from console.config_models import ServerProfile
from console.jobs.upgrade import UnknownInstall, profile_at, split_install
from tests.support.server_fixtures import SIM_LAUNCH
from tests.support.sim_fixtures import free_port

Capture = pytest.CaptureFixture[str]


def _config(tmp: Path, extra_flags: str = "") -> Path:
    q = json.dumps
    installs = "".join(f'"{v}" = {q([*SIM_LAUNCH, "--sim-sglang-version", v])}\n'
                       for v in ("0.5.18", "0.5.23"))
    path = tmp / "plateau.toml"
    path.write_text(
        f'default_host = "box"\n[[hosts]]\nname = "box"\nlocal = true\n'
        f"python = {q(sys.executable)}\nrun_dir = {q(str(tmp / 'run'))}\nprofile = \"p\"\n"
        f"[profiles.p]\nlaunch = {q(SIM_LAUNCH)}\nmodel_path = \"test/Example-MoE\"\n"
        f"port = {free_port()}\n[profiles.p.installs]\n{installs}[profiles.p.flags]\n"
        # written for 0.5.18: the old name, which 0.5.23 calls --cuda-graph-max-bs-decode
        "tp-size = 8\nquantization = \"modelopt_fp4\"\ncuda-graph-max-bs = 32\n"
        f"sim-startup-seconds = 0\nsim-speed = 4\nsim-state-file = {q(str(tmp / 'g.json'))}\n"
        f"{extra_flags}"
        "[sweeps.tiny]\nconcurrency = [4]\ninput_len = 64\noutput_len = 32\n"
        "prompts_per_concurrency = 4\n")
    return path


def test_p_at_v_names_an_install_of_a_profile() -> None:
    profile = ServerProfile(model_path="m", launch=["sglang", "serve"],
                            installs={"0.5.18": ["/opt/sgl18/bin/sglang", "serve"]})
    assert split_install("p@0.5.18") == ("p", "0.5.18") and split_install("p") == ("p", None)
    assert profile_at({"p": profile}, "p@0.5.18").launch == ["/opt/sgl18/bin/sglang", "serve"]
    assert profile_at({"p": profile}, "p") is profile
    with pytest.raises(UnknownInstall, match=r"no install '0.5.99' \(installs: 0.5.18\)"):
        profile_at({"p": profile}, "p@0.5.99")
    with pytest.raises(UnknownInstall, match="unknown profile 'q'"):
        profile_at({"p": profile}, "q@0.5.18")
    with pytest.raises(ValueError, match="install label"):
        ServerProfile(model_path="m", installs={"bad label": ["x"]})


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_upgrade_ab_runs_end_to_end_with_translated_flags(tmp_path: Path,
                                                             capsys: Capture) -> None:
    config = _config(tmp_path)
    argv = ["--config", str(config), "ab", "box", "--a", "p@0.5.18", "--b",
            "p@0.5.23", "--repeats", "2", "--interleave", "--preset", "tiny", "--json",
            "--db", str(tmp_path / "h.sqlite")]
    try:
        code = main(argv)
        out = capsys.readouterr().out
    finally:  # an A/B leaves its last side running, as on a host: this test's is stopped
        main(["--config", str(config), "server", "stop", "box"])
    assert code == 0
    said = json.loads(out)
    sides = said["sides"]
    assert sides["A"]["version"] == "0.5.18" and sides["B"]["version"] == "0.5.23"
    # the same flags, in each install's names: 0.5.18 takes the old name (a deprecated
    # alias there), 0.5.23 gets the new one with a note naming the rename's source
    assert sides["A"]["flags"]["cuda-graph-max-bs"] == 32 and not sides["A"]["renamed"]
    assert sides["B"]["flags"]["cuda-graph-max-bs-decode"] == 32
    assert "cuda-graph-max-bs" not in sides["B"]["flags"]
    assert any("--cuda-graph-max-bs-decode" in note and "PR #23906" in note
               for note in sides["B"]["renamed"])
    differ = {row["flag"]: (row["a"], row["b"]) for row in said["flags_differing"]}
    assert differ["sglang version"] == ("0.5.18", "0.5.23")
    verdict = said["verdict"]
    assert [(p["n_a"], p["n_b"]) for p in verdict["points"]] == [(2, 2)]
    assert verdict["sentence"].startswith("B ") and verdict["boots_a"] == 2
    assert any("boot-to-boot floor unknown" in note for note in verdict["notes"])


def test_a_flag_an_install_lacks_is_refused_before_anything_stops(tmp_path: Path,
                                                                  capsys: Capture) -> None:
    # --return-input-ids exists in 0.5.23 only: the 0.5.18 side cannot take it
    config = _config(tmp_path, "return-input-ids = true\n")
    argv = ["--config", str(config), "ab", "box", "--a", "p@0.5.18", "--b", "p@0.5.23",
            "--repeats", "1", "--preset", "tiny", "--db", str(tmp_path / "h.sqlite")]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "profile 'p@0.5.18' is invalid (nothing was stopped)" in err
    assert "--return-input-ids is not a flag of this launch command" in err
    assert not (tmp_path / "run").exists() or not list((tmp_path / "run").glob("**/*.log"))
