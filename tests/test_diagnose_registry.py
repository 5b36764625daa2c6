"""The cause registry (console/diagnose/registry.py) is the one place a cause's id and what it
checks are written: the rules run, the "checked" list and the ids all come from it, and the
README documents every registered id."""

from pathlib import Path

import pytest

from console.bench.models import StepResult
from console.diagnose.diagnose import diagnose
from console.diagnose.models import Cause, RunEvidence
from console.diagnose.registry import RULES, Context, Rule, rule
from console.diagnose.rules import CAUSE_IDS

README = Path(__file__).parent.parent / "README.md"


def test_every_registered_cause_is_run_checked_and_documented() -> None:
    assert tuple(RULES) == CAUSE_IDS
    # SGLang's eleven, then the two that need no log grammar (console/diagnose/engine_rules.py)
    assert len(CAUSE_IDS) == 13
    assert CAUSE_IDS[-2:] == ("gpu-waits-on-host", "admission-queue")
    step = StepResult(index=0, concurrency=1, status="ok")
    diagnosis = diagnose([step], RunEvidence(sources=["client"]))
    assert diagnosis.checked == [RULES[c].checked for c in CAUSE_IDS]
    rows = [line.split("|")[1] for line in README.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]
    documented = {cell.strip(" `") for row in rows for cell in row.split(",")}
    assert set(CAUSE_IDS) <= documented


def test_a_cause_id_is_registered_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        rule("thermal", checked="again")(lambda ev, ctx: None)
    assert RULES["thermal"].checked.startswith("GPU telemetry")


def test_a_rule_answers_with_its_own_id() -> None:
    wrong = Rule("power-cap", "x", lambda ev, ctx: Cause(id="thermal", title="t", confidence=0.5,
                                                    evidence=[]))
    ctx = Context(knee=diagnose([], RunEvidence()).knee, late=[], all=[])
    with pytest.raises(ValueError, match="returned a cause with id 'thermal'"):
        wrong(RunEvidence(), ctx)
