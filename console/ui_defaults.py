"""The `[ui]` table's defaults and the theme's, in one place for two readers: the config's
models (console.config_models) and the console's first frame, which is drawn before any model
exists (console.app.boot: `plateau demo` without a config file imports no pydantic until then).
"""

from __future__ import annotations

ASCII = False
LOG_MAX_LINES = 200_000
GPU_LOAD_MID = 50.0
GPU_LOAD_HIGH = 85.0
THEME = "plateau-dark"
