"""An ssh config whose `Include` reaches itself: one clear line naming the file and line of the
Include that closes the cycle, exit 2, and bounded work.

Before the fix a file that included itself once ran asyncssh's parser into a RecursionError
traceback, and one that included itself twice read 2**16 files (Plateau's alias scan stops
only at OpenSSH's depth of 16) before asyncssh recursed the same way. OpenSSH itself refuses
both ("Too many recursive configuration includes").
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from console.hostsources.origin import HostSourceError
from console.hostsources.ssh_config import ssh_hosts
from tests.test_config import plateau
from tests.test_config_host_sources import _write

HOST = "Host gpu-09\n  HostName h9\n"


def _shown(tmp_path: Path, ssh_text: str) -> tuple[int, str]:
    config = _write(tmp_path)
    (tmp_path / "ssh_config").write_text(ssh_text)
    shown = plateau("config", "show", env={"PLATEAU_CONFIG": str(config)})
    return shown.returncode, shown.stdout + shown.stderr


@pytest.mark.parametrize("times", [1, 2])
def test_a_config_that_includes_itself_is_one_line_naming_the_include(
    tmp_path: Path, times: int
) -> None:
    main = tmp_path / "ssh_config"
    code, output = _shown(tmp_path, f"Include {main}\n" * times + HOST)
    assert "Traceback" not in output and "RecursionError" not in output, output
    assert code == 2, output
    assert output.count("\n") == 1, output
    assert f"{main}:1: Include cycle" in output, output


def test_a_cycle_through_another_file_names_the_line_that_closes_it(tmp_path: Path) -> None:
    main, other = tmp_path / "ssh_config", tmp_path / "other.conf"
    other.write_text(f"Host gpu-10\n  HostName h10\nHost *\nInclude {main}\n")
    code, output = _shown(tmp_path, f"Include {other}\n" + HOST)
    assert code == 2, output
    assert output.count("\n") == 1, output
    assert f"{other}:4: Include cycle: {main} -> {other} -> {main}" in output, output


def test_includes_that_fan_out_stop_at_a_bound_on_files_read(tmp_path: Path) -> None:
    # No cycle, but each level includes the next twice: 2**12 reads of level 12 without a bound.
    levels = [tmp_path / f"level-{n}.conf" for n in range(13)]
    for here, below in pairwise(levels):
        here.write_text(f"Include {below}\nInclude {below}\nHost gpu-{here.stem}\n  HostName h\n")
    levels[-1].write_text("Host gpu-last\n  HostName h\n")
    reads: list[Path] = []
    original = Path.read_text

    def counted(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(self)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "read_text", counted)
        with pytest.raises(HostSourceError, match=r"level-\d+\.conf:\d+: Include reads more than"):
            ssh_hosts(levels[0], ["*"], [])
    assert len(reads) <= 257


def test_the_same_file_included_twice_without_a_cycle_still_loads(tmp_path: Path) -> None:
    shared = tmp_path / "shared.conf"
    shared.write_text("Host gpu-11\n  HostName h11\n")
    code, output = _shown(tmp_path, f"Include {shared}\nInclude {shared}\n" + HOST)
    assert code == 0, output
    assert "h9" in output and "h11" in output, output
