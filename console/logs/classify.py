"""Severity by text: SGLang's own lines carry no level name (docs/sglang.md §0.4, §2.1)."""

from __future__ import annotations

import re

from console.logs.models import Severity
from console.logs.own_requests import is_probe_path
from console.logs.prefilter import compile_literals

_ERROR = re.compile(
    r"Traceback \(most recent call last\)"
    r"|(?:^|[\s(])[\w.]*(?:Error|Exception)(?::|\s|$)"
    r"|\b(?:failed|Failed|FAILED|fatal|Fatal|FATAL|Segmentation fault|core dumped)\b"
    r"|out of memory"
    r"|terminate called after throwing"  # a C++ exception killed the process (crash.py)
)
_WARN = re.compile(
    r"[Ww]arning|WARNING|[Dd]eprecat|sub-optimal|\b[Ff]allback\b|\bnot found\b|[Rr]etract"
)

UVICORN_LEVELS = {
    "TRACE": Severity.DEBUG,
    "DEBUG": Severity.DEBUG,
    "INFO": Severity.INFO,
    "WARNING": Severity.WARNING,
    "ERROR": Severity.ERROR,
    "CRITICAL": Severity.ERROR,
}


# Substrings that every match of _ERROR or _WARN contains: a message with none of them is
# INFO without running either regex. Keep in step with the two patterns (a test checks).
SEVERITY_LITERALS = (
    "Traceback", "Error", "Exception", "failed", "Failed", "FAILED", "fatal", "Fatal", "FATAL",
    "Segmentation fault", "core dumped", "out of memory", "terminate called after throwing",
    "arning", "WARNING", "eprecat", "sub-optimal", "allback", "not found", "etract",
)
_HINT = compile_literals(SEVERITY_LITERALS)


def severity_from_text(message: str) -> Severity:
    """Best guess for a line no catalogue entry explains."""
    if _HINT is not None and _HINT.search(message) is None:
        return Severity.INFO
    return severity_by_patterns(message)


def severity_by_patterns(message: str) -> Severity:
    """severity_from_text without the literal prefilter (the reference it must agree with)."""
    if _ERROR.search(message) is not None:
        return Severity.ERROR
    if _WARN.search(message) is not None:
        return Severity.WARNING
    return Severity.INFO


def access_severity(status: int, method: str = "", path: str = "") -> Severity:
    if is_probe_path(method, path):
        return Severity.DEBUG  # the console's own poll: a 503 from /ready is an answer
    if status >= 500:
        return Severity.ERROR
    if status >= 400:
        return Severity.WARNING
    return Severity.DEBUG
