"""The catalogue: data validated at load, every example classified through the real parser."""

from __future__ import annotations

import pytest

from console.logs.assembler import parse_lines
from console.logs.catalogue import CatalogueError, default_catalogue, parse_catalogue

ENTRY = """
[[message]]
id = "x-one"
pattern = 'Something broke badly'
severity = "error"
explanation = "why"
action = "what"
"""


def test_packaged_catalogue_is_big_enough_and_complete() -> None:
    catalogue = default_catalogue()
    assert len(catalogue) >= 30
    for entry in catalogue.entries:
        assert entry.explanation and entry.action and entry.literals
        assert catalogue.examples[entry.id], f"{entry.id} has no example"
    ids = set(catalogue.by_id)
    for wanted in ("kv-pool-full-retract", "cuda-oom", "decode-oom", "moe-default-config",
                   "deepgemm-jit-precompile", "deepgemm-scale-fmt", "hf-unauthenticated",
                   "watchdog-timeout", "subprocess-crashed", "scheduler-exception",
                   "nan-detected", "health-check-failed", "sigterm-draining"):
        assert wanted in ids


@pytest.mark.parametrize("entry_id", sorted(default_catalogue().by_id))
def test_every_example_is_classified_as_its_entry(entry_id: str) -> None:
    catalogue = default_catalogue()
    entry = catalogue.by_id[entry_id]
    for example in catalogue.examples[entry_id]:
        event = parse_lines([f"[2026-02-19 05:21:47 TP0] {example}"])[0]
        assert event.catalogue_id == entry_id, (example, event.catalogue_id)
        assert event.severity == entry.severity


def test_old_deepgemm_warning_exact_text() -> None:
    text = ("DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. "
            "This might cause accuracy degradation on Blackwell.")
    assert default_catalogue().match_id(text) == "deepgemm-scale-fmt"


def test_unrelated_lines_do_not_match() -> None:
    catalogue = default_catalogue()
    for message in ("Init parallel begin.", "Load weight end. elapsed=1 s",
                    "Decode batch, #running-req: 1", "nothing to see"):
        assert catalogue.match(message) is None


def test_valid_minimal_catalogue_derives_literal() -> None:
    catalogue = parse_catalogue(ENTRY)
    assert catalogue.entries[0].literals == ("Something broke badly",)
    assert catalogue.match_id("x: Something broke badly!") == "x-one"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (ENTRY.replace('severity = "error"\n', ""), "missing key(s) severity"),
        (ENTRY.replace("'Something broke badly'", "'(unclosed'"), "pattern does not compile"),
        (ENTRY.replace('"error"', '"loud"'), "unknown severity 'loud'"),
        (ENTRY + ENTRY, "duplicate id 'x-one'"),
        (ENTRY.replace('id = "x-one"', 'id = "X One"'), "must be lowercase"),
        (ENTRY + 'examples = ["nope"]\n', "does not match its example"),
        (ENTRY.replace("'Something broke badly'", "'a|b'"), "cannot derive a literal"),
        (ENTRY + "colour = 1\n", "unknown key(s) colour"),
        ("[[message]\n", "<catalogue>"),
        ("x = 1\n", "expected one or more [[message]] tables"),
    ],
)
def test_invalid_catalogues_fail_with_clear_errors(text: str, message: str) -> None:
    with pytest.raises(CatalogueError) as info:
        parse_catalogue(text)
    assert message in str(info.value)
    assert str(info.value).startswith("<catalogue>")
