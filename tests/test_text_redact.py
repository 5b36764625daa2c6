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


# SGLang 0.5.23 prints the arguments as a dict (docs/sglang.md §2.4): the key leaked in clear.
DICT_ARGS = (
    "[2026-11-02 09:14:03] server_args={'model_path': 'm', 'api_key': 'sk-dict-456', "
    "'admin_api_key': \"adm-7\", 'ssl_keyfile_password': None, 'tp_size': 8, "
    "'tokenizer_path': 'tok'}"
)


def test_every_form_sglang_prints_is_redacted() -> None:
    cases = {
        DICT_ARGS: ("sk-dict-456", "adm-7"),
        '{"api_key": "sk-json-1", "tp_size": 8}': ("sk-json-1",),
        "ServerArgs(api_key='it\\'s-k', tp_size=8)": ("it\\'s-k", "s-k"),
        "launch: --admin-api-key adm-2 --api-key=sk-3 --port 1": ("adm-2", "sk-3"),
        "env SGLANG_API_KEY=sk-env-4 OPENAI_API_KEY=sk-env-5 HF_TOKEN=hf_abc python -m x":
            ("sk-env-4", "sk-env-5", "hf_abc"),
        "Authorization: Bearer sk-bearer-6": ("sk-bearer-6",),
        "GET /api/x?api_key=s3cret&x=1": ("s3cret",),
        "Namespace(api_key=sk-bare-7, tp=8)": ("sk-bare-7",),
    }
    for line, secrets in cases.items():
        out = redact_secrets(line)
        assert "***" in out, line
        for secret in secrets:
            assert secret not in out, (line, out)


def test_redaction_keeps_what_is_not_secret() -> None:
    out = redact_secrets(DICT_ARGS)
    assert "'tp_size': 8" in out and "'tokenizer_path': 'tok'" in out
    assert "'ssl_keyfile_password': None" in out and "'api_key': '***'" in out
    assert redact_secrets("MAX_TOTAL_TOKENS=5 SGLANG_TOKENIZER=x") == \
        "MAX_TOTAL_TOKENS=5 SGLANG_TOKENIZER=x"
    assert redact_secrets("api_key=None, x") == "api_key=None, x"


def test_redaction_is_idempotent() -> None:
    once = redact_secrets(DICT_ARGS + " --api-key k SGLANG_API_KEY=k Bearer k")
    assert redact_secrets(once) == once
