"""Where the history database lives. Apart from console.store.db, so that what only names the
path (the console's start-up) does not import the store and the run models behind it."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_VAR = "PLATEAU_DB"


def default_db_path() -> Path:
    """$PLATEAU_DB, else `history.sqlite3` in the platformdirs user data dir."""
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser()
    return Path(platformdirs.user_data_dir("plateau")) / "history.sqlite3"
