"""`plateau HOST` / `plateau snapshot HOST` with no store path given: the sessions get the
default history DB (the jobs refactor moved default_store_path away from the adapters and the
launch still imported it: every real launch raised ImportError; seen on the GPU machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.app.launch import Launch, build_sessions
from console.config import load_config


def test_launch_without_store_path_uses_the_default_db(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLATEAU_DB", str(tmp_path / "history.sqlite3"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    config = tmp_path / "config.toml"
    config.write_text('[[hosts]]\nname = "box"\nlocal = true\n')
    launch = Launch(load_config(config))
    sessions, active = build_sessions(launch)
    assert active == "box" and [s.host.name for s in sessions] == ["box"]
    assert launch.store_path == tmp_path / "history.sqlite3"
