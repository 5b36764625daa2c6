"""Severity by text: SGLang's own lines carry no level name (reference §0.4, §2.1)."""

from __future__ import annotations

import re

from console.logs.models import Severity

BATCH_PREFIXES = ("Decode batch", "Prefill batch")

_ERROR = re.compile(
    r"Traceback \(most recent call last\)"
    r"|(?:^|[\s(])[\w.]*(?:Error|Exception)(?::|\s|$)"
    r"|\b(?:failed|Failed|FAILED|fatal|Fatal|FATAL|Segmentation fault|core dumped)\b"
    r"|out of memory"
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


def severity_from_text(message: str) -> Severity:
    """Best guess for a line no catalogue entry explains."""
    if _ERROR.search(message) is not None:
        return Severity.ERROR
    if _WARN.search(message) is not None:
        return Severity.WARNING
    return Severity.INFO


def access_severity(status: int) -> Severity:
    if status >= 500:
        return Severity.ERROR
    if status >= 400:
        return Severity.WARNING
    return Severity.DEBUG
