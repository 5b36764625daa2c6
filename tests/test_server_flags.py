"""Flag schema from argparse --help, and profile validation against it."""

from __future__ import annotations

import os
from typing import Any

import pytest

from console.config_models import ServerProfile
from console.server.flags import FlagSchema, FlagSpec, parse_help
from console.server.known import TYPE_HINTS
from console.server.records import display_command, redact_argv
from console.server.validate import Issue, ValidationReport, check_safety, validate_profile


@pytest.fixture(scope="module")
def sglang_help() -> str:
    """The simulator's rebuilt SGLang 0.5.23 parser, formatted at 100 columns."""
    from console.sim.args import build_sglang_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        return build_sglang_parser().format_help()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


@pytest.fixture(scope="module")
def schema(sglang_help: str) -> FlagSchema:
    return parse_help(sglang_help, version="0.5.23").with_hints(TYPE_HINTS)


def profile(**flags: Any) -> ServerProfile:
    extra = flags.pop("_extra", [])
    return ServerProfile(model_path="m", flags=flags, extra_args=extra)


def codes(report: ValidationReport) -> list[tuple[str, str | None]]:
    return [(i.code, i.flag) for i in report.issues]


def spec(schema: FlagSchema, name: str) -> FlagSpec:
    found = schema.get(name)
    assert found is not None, name
    return found


def hint(issue: Issue) -> str:
    assert issue.suggestion is not None, issue
    return issue.suggestion


def test_parses_every_option_with_choices_and_aliases(schema: FlagSchema) -> None:
    assert len(schema.flags) == 531  # reference Appendix A: 531 options besides -h/--help
    moe = schema.get("moe-runner-backend")
    assert moe is not None and moe.choices is not None
    assert "flashinfer_cutlass" in moe.choices and "cutlass" in moe.choices
    assert spec(schema, "tensor-parallel-size").name == "tp-size"
    assert spec(schema, "ep").name == "ep-size"
    assert spec(schema, "trust-remote-code").takes_value is False
    assert spec(schema, "cuda-graph-bs-decode").nargs == "+"
    assert spec(schema, "uvicorn-access-log-exclude-prefixes").nargs == "*"
    assert spec(schema, "no-enable-tf32-matmul").name == "enable-tf32-matmul"
    assert spec(schema, "disable-cuda-graph").deprecated
    assert spec(schema, "tp-size").value_type == "int"
    assert spec(schema, "mem-fraction-static").value_type == "float"
    assert schema.get("nsa-decode-backend") is None  # gone in 0.5.23


def test_python_313_metavar_once_and_foreign_banner() -> None:
    text = (
        "usage: sglang serve [-h]\n\noptions:\n"
        "  -h, --help            show this help message and exit\n"
        "  --tp-size, --tensor-parallel-size TP_SIZE\n"
        "                        The tensor parallelism size.\n"
        "  --attention-backend {triton,fa3}\n"
        "  --x-flag              A switch.\n"
        "--- Help for Diffusion Model Server ---\n"
        "options:\n  --diffusion-only DIFFUSION_ONLY\n"
    )
    schema = parse_help(text)
    assert spec(schema, "tensor-parallel-size").metavar == "TP_SIZE"
    assert spec(schema, "attention-backend").choices == ("triton", "fa3")
    assert spec(schema, "x-flag").takes_value is False
    assert schema.get("diffusion-only") is None


def test_renamed_flags_are_translated_with_a_note(schema: FlagSchema) -> None:
    """A profile written for an older SGLang: each exact rename (the old names were aliases
    of the new ones in 0.5.18, srt/server_args.py of v0.5.18) is launched under the host's
    name, with a warning naming it; extra_args are not rewritten and still refused."""
    report = validate_profile(
        profile(**{"nsa-decode-backend": "fa3", "nsa-prefill-backend": "fa3",
                   "cuda-graph-max-bs": 64, "_extra": ["--cuda-graph-max-bs", "8"]}),
        schema,
    )
    by_flag = {i.flag: i for i in report.warnings if i.code == "translated"}
    assert "--dsa-decode-backend fa3" in hint(by_flag["nsa-decode-backend"])
    assert "--dsa-prefill-backend fa3" in hint(by_flag["nsa-prefill-backend"])
    assert "--cuda-graph-max-bs-decode 64" in hint(by_flag["cuda-graph-max-bs"])
    errors = {i.flag: i for i in report.errors}
    assert list(errors) == ["cuda-graph-max-bs"] and errors["cuda-graph-max-bs"].code == \
        "ambiguous"
    assert "--cuda-graph-max-bs-decode" in hint(errors["cuda-graph-max-bs"])
    from console.server.translate import translate_profile

    launched, renamed = translate_profile(profile(**{"cuda-graph-max-bs": 64}), schema)
    assert launched.flags == {"cuda-graph-max-bs-decode": 64} and len(renamed) == 1


def test_rename_not_suggested_when_the_host_still_has_the_old_flag() -> None:
    old = parse_help("options:\n  --nsa-decode-backend {fa3,flashmla_kv}\n")
    report = validate_profile(profile(**{"nsa-decode-backend": "fa3"}), old)
    assert report.ok, report.summary()


def test_near_misses_choices_numbers_switches(schema: FlagSchema) -> None:
    report = validate_profile(
        profile(**{
            "atention-backend": "triton",
            "moe-runner-backend": "cutlas",
            "mem-fraction-static": "0.9x",
            "tp-size": 2.5,
            "trust-remote-code": "yes",
            "max-total-tokens": "64k",
            "dtype": "bfloat16",
        }),
        schema,
    )
    errors = {i.flag: i for i in report.errors}
    assert "--attention-backend" in hint(errors["atention-backend"])
    assert errors["moe-runner-backend"].code == "bad-choice"
    assert "cutlass" in hint(errors["moe-runner-backend"])
    assert errors["mem-fraction-static"].code == "bad-number"
    assert errors["tp-size"].code == "bad-number"
    assert errors["trust-remote-code"].code == "switch-value"
    assert "max-total-tokens" not in errors and "dtype" not in errors


def test_range_abbreviation_duplicate_and_profile_fields(schema: FlagSchema) -> None:
    report = validate_profile(
        profile(**{"mem-fraction-static": 1.5, "tp": 8, "port": 1234,
                   "_extra": ["--tp-size", "4", "--served-model-name", "x"]}),
        schema,
    )
    got = codes(report)
    assert ("out-of-range", "mem-fraction-static") in got
    assert ("abbreviation", "tp") in got  # a warning: argparse accepts it
    assert ("duplicate", "tp-size") in got
    assert ("profile-field", "port") in got
    assert [i.code for i in report.warnings] == ["abbreviation"]


def test_extra_args_grouping_and_stray_values(schema: FlagSchema) -> None:
    ok = validate_profile(
        profile(_extra=["--cuda-graph-bs-decode", "1", "2", "4", "--enable-metrics",
                        "--kv-cache-dtype=fp8_e4m3"]),
        schema,
    )
    assert ok.ok, ok.summary()
    bad = validate_profile(profile(_extra=["--enable-metrics", "oops"]), schema)
    assert ("stray", None) in codes(bad)


@pytest.mark.parametrize(
    "flags, extra, env",
    [
        ({"served-model-name": "a\nb"}, [], {}),
        ({"bad name": 1}, [], {}),
        ({"--leading": 1}, [], {}),
        ({}, ["--x\x00y"], {}),
        ({}, ["-x"], {}),
        ({}, ["--Upper"], {}),
        ({}, [], {"lower_case": "1"}),
        ({}, [], {"OK": "multi\nline"}),
    ],
)
def test_safety_rejects_hostile_names_and_control_characters(
    flags: dict[str, Any], extra: list[str], env: dict[str, str]
) -> None:
    hostile = ServerProfile.model_construct(
        launch=["python", "-m", "sglang.launch_server"], model_path="m", host="127.0.0.1",
        port=30000, flags=flags, extra_args=extra, env=env, log_dir=None, api_key_env=None,
        description="",
    )
    assert not check_safety(hostile).ok


def test_shell_metacharacters_are_plain_values(schema: FlagSchema) -> None:
    values = profile(**{"served-model-name": "; touch /tmp/x", "chat-template": "$(id)`id`"})
    assert validate_profile(values, schema).ok
    assert validate_profile(profile(**{"attention-backend": "; touch /tmp/x"}), schema).errors


def test_secrets_are_redacted_in_commands() -> None:
    argv = ["sglang", "serve", "--api-key", "s3cret", "--admin-api-key=t0p", "--port", "1"]
    assert "s3cret" not in " ".join(redact_argv(argv))
    assert "t0p" not in " ".join(redact_argv(argv))
    shown = display_command(argv, {"NCCL_P2P_DISABLE": "1", "HF_TOKEN": "hf_x"})
    assert shown.startswith("env NCCL_P2P_DISABLE=1 'HF_TOKEN=<redacted>' sglang serve")
    assert "hf_x" not in shown and "s3cret" not in shown


def test_a_count_of_tokens_is_not_a_secret() -> None:
    """`--max-total-tokens 4096` and transformers serve's `--cb-max-batch-tokens 128` are sizes:
    redacting them made the shown and stored command differ from what ran; a token still is
    one (`--hf-token`, `--token`, `--secrets-file`)."""
    argv = ["x", "--max-total-tokens", "4096", "--cb-max-batch-tokens", "128",
            "--hf-token", "hf_x", "--token=t", "--client-secrets", "s"]
    shown = redact_argv(argv)
    assert shown[1:5] == ["--max-total-tokens", "4096", "--cb-max-batch-tokens", "128"]
    assert "hf_x" not in shown and "--token=<redacted>" in shown and "s" not in shown[-1:]
