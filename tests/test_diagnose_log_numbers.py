"""Every number a diagnosis quotes from a log is in that log, or its clause says it is derived
(and from what): over every real log in tests/data/logs/real/ (new corpus files are covered
as they land), and on lines shaped like the ones issue 37 found misquoted."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.diagnose.diagnose import suggestion_text
from console.diagnose.from_log import text_chunks
from console.diagnose.log_diagnosis import LogDiagnosis, diagnose_log, open_log

REAL = Path(__file__).parent / "data" / "logs" / "real"
LOGS = sorted(p.name for p in REAL.glob("*.log"))

# A number standing alone: not inside a name (fp8_e4m3, TP0, sglang#33483, v0.5).
NUMBER = re.compile(r"(?<![\w#.])\d+(?:\.\d+)?(?![\w])")
# A count of lines (or sizes) the diagnosis made by counting: `8 of 8 Decode lines`,
# `2 lines`, `36 sizes`, `3 'KV cache pool is full. ...' lines`.
COUNT_AFTER = re.compile(r"^(?: of \d+)? (?:'[^']*' |[A-Za-z]+ ){0,2}(?:lines|sizes)\b")
COUNTED_OF = re.compile(r"of $")
MARKS = ("derived", "a prior", "upper bound")


def _numbers(text: str) -> Iterator[tuple[str, str, str]]:
    """(number, text before it, text after it); `a..b` ranges read as two numbers."""
    spaced = text.replace("..", " .. ")
    for found in NUMBER.finditer(spaced):
        yield found.group(), spaced[:found.start()], spaced[found.end():]


def log_numbers(text: str) -> set[float]:
    return {float(n) for n, _before, _after in _numbers(text)}


def unquoted(sentence: str, in_log: set[float], lines: int) -> list[str]:
    """The numbers of `sentence` that are neither in the log, nor counts of its lines, nor in
    a clause (between semicolons) that says it is derived, a prior or a bound."""
    bad = []
    for clause in sentence.split(";"):
        if any(mark in clause for mark in MARKS):
            continue
        for number, before, after in _numbers(clause):
            if float(number) in in_log:
                continue
            counted = COUNT_AFTER.match(after) or (
                COUNTED_OF.search(before) and re.match(r"^ (?:[A-Za-z]+ ){0,2}lines\b", after))
            if counted and float(number) <= lines:
                continue
            bad.append(number)
    return bad


def sentences(result: LogDiagnosis) -> Iterator[str]:
    d = result.diagnosis
    yield d.knee.sentence
    yield from result.inferred
    for cause in d.causes + d.candidates:
        yield from (e.text for e in cause.evidence)
        if cause.presence is not None:
            yield cause.presence.text
        yield suggestion_text(cause)


@pytest.mark.parametrize("name", LOGS)
def test_every_number_in_a_diagnosis_is_in_its_log(name: str) -> None:
    path = REAL / name
    text = path.read_text(encoding="utf-8", errors="replace")
    result = diagnose_log(open_log(str(path)), None, path=str(path))
    in_log = log_numbers(text)
    lines = text.count("\n") + 1
    said = list(sentences(result))
    assert said, "a diagnosis says at least its knee sentence"
    for sentence in said:
        assert unquoted(sentence, in_log, lines) == [], sentence


def _decode(running: int, queue: int, usage: float, rate: float, second: int) -> str:
    return (f"[2026-05-01 09:00:{second:02d}] Decode batch, #running-req: {running}, "
            f"#token: {running * 300}, token usage: {usage:.2f}, cuda graph: True, "
            f"gen throughput (token/s): {rate:.2f}, #queue-req: {queue}, ")


def test_the_checker_catches_an_invented_level() -> None:
    # Issue 37: `step c=16 ...: 10 of 16 requests queue` where every line says #queue-req 5
    # (6 running + 5 queued, rounded up to 16): 16 and 10 are in no line.
    lines = [_decode(6, 5, 0.40, 300.0 + i, i) for i in range(5)]
    in_log = log_numbers("\n".join(lines))
    assert unquoted("step c=16: 10 of 16 requests queue", in_log, len(lines)) == ["16", "10",
                                                                                  "16"]
    assert unquoted("#running-req 6 while #queue-req 5", in_log, len(lines)) == []
    assert unquoted("5 of 5 Decode lines hold 6", in_log, len(lines)) == []
    assert unquoted("held 11 (derived: #running-req + #queue-req)", in_log, len(lines)) == []


def test_a_log_without_a_sweep_is_grouped_by_what_its_lines_hold() -> None:
    # Every line holds 6 running + 5 queued: one group of 11 held, never a level of 16, and
    # no sentence quotes a count the lines do not print.
    lines = [_decode(6, 5, 0.40, 300.0 + i, i) for i in range(5)]
    result = diagnose_log(text_chunks(lines), None, path="held")
    assert [e.concurrency for e in result.split.evidence] == [11]
    assert result.diagnosis.knee.kind == "insufficient"
    in_log = log_numbers("\n".join(lines))
    for sentence in sentences(result):
        assert unquoted(sentence, in_log, len(lines)) == [], sentence
