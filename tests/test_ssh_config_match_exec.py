"""`Match exec` in an ssh config: reading hosts never runs its command.

asyncssh's config parser runs `Match exec` commands (a shell) while it resolves an alias.
Plateau reads the config to list hosts (`config show`, `server status`, every command that
loads the config), so a command there would run each time. Where the exec would be
evaluated for an alias, the read is refused with file:line, as ProxyCommand is; where an
earlier criterion on the same line already failed (so ssh would not run it either), the
alias resolves and nothing runs. The witness is the file the command would create.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_config import plateau
from tests.test_config_host_sources import _write


def _refused(tmp_path: Path, ssh_text: str) -> tuple[int, str, Path]:
    witness = tmp_path / "witness"
    config = _write(tmp_path)
    (tmp_path / "ssh_config").write_text(ssh_text.format(witness=witness))
    shown = plateau("config", "show", env={"PLATEAU_CONFIG": str(config)})
    return shown.returncode, shown.stdout + shown.stderr, witness


@pytest.mark.parametrize(
    ("ssh_text", "line"),
    [
        ('Match exec "touch {witness}"\n  User x\nHost gpu-09\n  HostName h\n', 1),
        ('Host gpu-09\n  HostName h\nMatch originalhost gpu-* exec "touch {witness}"\n'
         '  Port 2\n', 3),
        ('Host gpu-09\n  HostName h\nMatch all\nMatch !exec="touch {witness}"\n  Port 2\n', 4),
        ('Host gpu-09\n  HostName h\nMATCH User * EXEC "touch {witness}"\n  Port 2\n', 3),
    ],
)
def test_match_exec_is_refused_with_its_line_and_never_runs(
    tmp_path: Path, ssh_text: str, line: int
) -> None:
    code, output, witness = _refused(tmp_path, ssh_text)
    assert not witness.exists(), "the Match exec command ran while Plateau read its hosts"
    assert code == 2, output
    assert output.count("\n") == 1, output
    assert f"{tmp_path / 'ssh_config'}:{line}" in output and "Match exec" in output, output


def test_match_exec_behind_a_failing_criterion_is_not_evaluated(tmp_path: Path) -> None:
    # `host web-*` fails for gpu-09 before exec, so ssh would not run it: the host resolves.
    code, output, witness = _refused(
        tmp_path, 'Host gpu-09\n  HostName h9\nMatch originalhost web-* exec "touch {witness}"\n'
        '  Port 2\n')
    assert not witness.exists()
    assert code == 0, output
    assert "gpu-09" in output and "h9" in output
