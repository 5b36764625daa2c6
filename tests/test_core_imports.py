"""The core under console/ (everything but console/app/) must import without Textual.

Walks the package with pkgutil, so modules added later are covered automatically. Runs in a
subprocess so modules already imported by other tests cannot hide a violation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import importlib, json, pkgutil, sys
import console
names = []
for info in pkgutil.walk_packages(console.__path__, "console."):
    if info.name == "console.app" or info.name.startswith("console.app."):
        continue
    if info.name.endswith("__main__"):
        continue  # running a module's main is not importing it
    names.append(info.name)
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
offenders = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print(json.dumps({"modules": names, "failed": failed, "textual": offenders}))
"""


def test_core_imports_without_textual() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(report["modules"]) > 10, "the walk found too few modules"
    assert "console.session.service" in report["modules"]
    assert report["failed"] == {}, report["failed"]
    assert report["textual"] == [], f"textual imported by the core: {report['textual'][:5]}"


def test_probe_detects_textual() -> None:
    """The probe itself can fail: importing the app package does pull Textual in."""
    code = "import sys, console.app.app; print('textual' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False,
        timeout=120,
    )
    assert result.stdout.strip() == "True", result.stderr
