"""Sanitising untrusted text (log lines, server responses) on entry to the core."""

from __future__ import annotations

import functools
import re

# CSI, OSC (BEL or ST terminated), other two-byte escapes, and C0/C1 controls except tab.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL | ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC strings
    r"|\x1b[@-Z\\-_]?"  # lone ESC or 2-byte Fe sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
# Also lone surrogates (from surrogateescape decoding: they crash terminal output) and the
# bidi/line-separator format characters that can reorder or break what the operator sees
# (the embeddings, overrides and isolates, and the marks LRM, RLM and ALM).
_CONTROLS = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069"
    r"\u200e\u200f\u061c]"
)


def sanitize(text: str) -> str:
    """Return `text` with terminal escapes removed and control characters made visible.

    Control characters become U+FFFD-free printable placeholders (`^X` style would shift
    columns of tabular logs, so we use the Unicode control-picture block instead).
    """
    if text.isprintable():
        return text
    without_escapes = _ESCAPES.sub("", text)
    if len(without_escapes) > _LONG_LINE:
        # re.sub with a callback keeps one small string per match: a 1 MiB line of NULs
        # peaked at 90 MB. translate() is C all the way (but slower on ordinary lines).
        return without_escapes.translate(_control_table())
    return _CONTROLS.sub(_control_picture, without_escapes)


_LONG_LINE = 1 << 16


@functools.cache
def _control_table() -> dict[int, str]:
    """Every character _CONTROLS matches -> its placeholder (the same as _control_picture)."""
    codes = [*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0), *range(0xD800, 0xE000),
             0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A),
             0x200E, 0x200F, 0x061C]
    return {code: _picture(code) for code in codes}


def _control_picture(match: re.Match[str]) -> str:
    return _picture(ord(match.group()))


def _picture(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return "\ufffd"


def sanitize_lines(text: str) -> str:
    """`sanitize` each line of a multi-line text, keeping its line breaks."""
    return "\n".join(sanitize(line) for line in text.split("\n"))


def decode_untrusted(data: bytes) -> str:
    """Decode bytes that may be invalid UTF-8, then sanitise."""
    return sanitize(data.decode("utf-8", errors="replace"))


# SGLang prints its arguments at startup in the form of its version: `server_args=ServerArgs(...,
# api_key='KEY', ...)` (a dataclass repr) or `server_args={..., 'api_key': 'KEY', ...}` (a dict
# repr, 0.5.23), keeps `--api-key KEY` in launch commands, and a shell or a wrapper may echo
# `SGLANG_API_KEY=KEY`: keys must not reach the screen, the history, recordings or exports.
_SECRET_NAME = r"(?:admin_)?api_key|ssl_keyfile_password|hf_token|api_token|access_token"
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
_SECRET_ASSIGNMENT = re.compile(
    rf"\b({_SECRET_NAME})=(?!'\*\*\*'|None\b)({_QUOTED}|[^\s,)&'\"]+)", re.IGNORECASE
)
_SECRET_ITEM = re.compile(
    rf"(['\"])({_SECRET_NAME})\1(\s*:\s*)(?!'\*\*\*')({_QUOTED})", re.IGNORECASE
)
_SECRET_FLAG = re.compile(r"(--(?:admin-)?api-key(?:=|\s+))(?!\*\*\*)(\S+)")
_SECRET_ENV = re.compile(
    r"(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]*(?:API_KEY|_TOKEN|_PASSWORD|_SECRET))=(?!\*\*\*)(\S+)"
)
_BEARER = re.compile(r"(\bBearer\s+)(?!\*\*\*)([A-Za-z0-9._~+/=-]+)")
def _may_hold_secret(text: str) -> bool:
    """A cheap first look (every log line passes here): a substring each pattern needs. An
    inline `or` chain: several times faster than any() over a tuple or one regex search."""
    return ("api" in text or "API" in text or "_token" in text or "_TOKEN" in text
            or "assword" in text or "ASSWORD" in text or "SECRET" in text or "Bearer" in text)


def redact_secrets(text: str) -> str:
    """`text` with API keys, tokens and passwords replaced by ***, in every form SGLang (and a
    shell around it) prints them: `api_key='K'`, `'api_key': 'K'`, `"api_key": "K"`,
    `--api-key K`, `--api-key=K`, `SGLANG_API_KEY=K`, `Authorization: Bearer K`."""
    if not _may_hold_secret(text):
        return text
    text = _SECRET_ASSIGNMENT.sub(r"\1='***'", text)
    text = _SECRET_ITEM.sub(r"\1\2\1\3'***'", text)
    text = _SECRET_FLAG.sub(r"\1***", text)
    text = _SECRET_ENV.sub(r"\1=***", text)
    return _BEARER.sub(r"\1***", text)
