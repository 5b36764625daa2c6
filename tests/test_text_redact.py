"""API keys in SGLang's own output never reach the screen, the history or exports."""

from __future__ import annotations

from console.logs.assembler import parse_lines
from console.text import redact_secrets

SERVER_ARGS = (
    "[2026-02-19 05:20:01] server_args=ServerArgs(model_path='m', api_key='sk-live-123', "
    "admin_api_key=\"adm-9\", ssl_keyfile_password=None, tp_size=8)"
)


def test_assignments_and_flags_are_redacted() -> None:
    out = redact_secrets(SERVER_ARGS)
    assert "sk-live-123" not in out and "adm-9" not in out
    assert "api_key='***'" in out and "ssl_keyfile_password=None" in out
    assert "tp_size=8" in out
    flags = redact_secrets("python -m sglang.launch_server --api-key sk-1 --api-key=sk-2 --tp 8")
    assert "sk-1" not in flags and "sk-2" not in flags and "--tp 8" in flags


def test_lines_without_secrets_are_untouched() -> None:
    line = "[2026-02-19 05:20:01 TP0] Decode batch, #running-req: 9, token usage: 0.01"
    assert redact_secrets(line) is line


def test_parsed_log_events_carry_no_key() -> None:
    events = parse_lines([SERVER_ARGS])
    assert events and all("sk-live-123" not in e.text for e in events)
