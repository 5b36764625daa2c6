"""Agreement of Plateau with the real-log corpus's hand-written truth (run it:
`python tests/bench/corpus_agreement.py [--markdown] [--corpus DIR] [SLUG ...]`).

For every `<slug>.log` in tests/data/logs/real/ (or DIR) it runs Plateau's log diagnosis in
process (what `plateau diagnose --log FILE --json` prints) and logscan (`plateau logscan FILE
--json`), and compares both with the file's `<slug>.truth.json` sidecar, written by reading the
log before Plateau was run on it:

- a **crash** file (the sidecar has `oom: true` or an event of kind `crash` or `oom`): agrees
  when the diagnosis leads with the crash (a truthy `crash` field, top level or in
  `diagnosis`, or a first cause whose id names a crash, an OOM or a failed launch) and logscan
  names it (an error-severity notable event, a final exception line, or its `oom` flag);
- a **cause** file (`plateau_causes` non-empty): agrees when the sidecar's first cause is the
  diagnosis's first cause; the other causes it names are reported as present or missing;
- a **healthy** file (`abstain: true`): agrees when the diagnosis names no cause.

It prints a per-file table and the totals; `--markdown` prints them as Markdown, and
`--update-index` rewrites the block between the agreement markers of INDEX.md with that table (the
"agrees" column INDEX.md shows is regenerated this way). Exit status 0 always: it is a report,
not a gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.commands.logscan import scan_path
from console.diagnose.log_diagnosis import diagnose_log, log_diagnosis_json, open_log

REAL = Path(__file__).resolve().parents[1] / "data" / "logs" / "real"
BEGIN, END = "<!-- agreement:begin -->", "<!-- agreement:end -->"
CRASH_EVENTS = {"crash", "oom"}
CRASH_WORDS = ("crash", "oom", "failed-launch", "launch-failed", "capture-failed")


@dataclass(frozen=True)
class Row:
    slug: str
    kind: str  # crash, cause or healthy
    expected: str
    diagnose: str
    logscan: str
    agrees: bool
    why: str

    @property
    def verdict(self) -> str:
        return "yes" if self.agrees else f"no: {self.why}"


def _kind(truth: dict[str, Any]) -> str:
    if truth["oom"] or any(e["kind"] in CRASH_EVENTS for e in truth["events"]):
        return "crash"
    return "cause" if truth["plateau_causes"] else "healthy"


def _diagnosis(log: Path) -> dict[str, Any]:
    result: dict[str, Any] = log_diagnosis_json(diagnose_log(open_log(str(log)), path=str(log)))
    return result


def _cause_ids(diag: dict[str, Any]) -> list[str]:
    return [str(c["id"]) for c in diag["diagnosis"]["causes"]]


def _leads_with_crash(diag: dict[str, Any]) -> bool:
    if diag.get("crash") or diag["diagnosis"].get("crash"):
        return True
    ids = _cause_ids(diag)
    return bool(ids) and any(word in ids[0] for word in CRASH_WORDS)


def _logscan_crash(log: Path) -> str:
    """What logscan names as fatal: its crash finding (console/logs/crash_finding.py), else its
    error-severity events, else its last exception line."""
    report = scan_path(str(log))
    if report.crash is not None:
        return f"{report.crash.kind} at line {report.crash.line}"
    errors = [n.id for n in report.notable if n.severity == "error"]
    if errors:
        return ", ".join(dict.fromkeys(errors))
    if report.exceptions:
        return f"exception line {report.exceptions[-1].line}"
    return "oom" if report.oom else ""


def judge(log: Path) -> Row:
    truth: dict[str, Any] = json.loads(log.with_suffix(".truth.json").read_text("utf-8"))
    kind, diag = _kind(truth), _diagnosis(log)
    ids = _cause_ids(diag)
    named = ", ".join(ids) or "no clear cause"
    if kind == "crash":
        scan = _logscan_crash(log)
        led = _leads_with_crash(diag)
        why = "; ".join(filter(None, [
            "" if led else f"diagnose does not lead with the crash ({named})",
            "" if scan else "logscan names no crash"]))
        return Row(log.stem, kind, "crash first", named, scan or "-", led and bool(scan), why)
    if kind == "cause":
        want: list[str] = truth["plateau_causes"]
        missing = [c for c in want if c not in ids]
        agrees = bool(ids) and ids[0] == want[0]
        if agrees:
            why = ""
        elif want[0] in ids:
            why = f"{want[0]} named but not first ({named})"
        else:
            why = f"{want[0]} not named ({named})"
        if missing and agrees:
            agrees, why = False, f"{', '.join(missing)} not named ({named})"
        return Row(log.stem, kind, ", ".join(want), named, "-", agrees, why)
    return Row(log.stem, kind, "abstain", named, "-", not ids, f"names {named} on a healthy log")


def _totals(rows: list[Row]) -> list[str]:
    out = [f"agrees: {sum(r.agrees for r in rows)} of {len(rows)} files"]
    for kind, label in (("cause", "cause files (expected cause first, all named)"),
                        ("healthy", "healthy files (abstains)"),
                        ("crash", "crash files (crash first, logscan names it)")):
        group = [r for r in rows if r.kind == kind]
        out.append(f"  {label}: {sum(r.agrees for r in group)} of {len(group)}")
    return out


def _plain(rows: list[Row]) -> list[str]:
    width = max(len(r.slug) for r in rows)
    return [f"{r.slug:<{width}}  {r.kind:<7}  expected {r.expected:<40}  diagnose: {r.diagnose:<40}"
            f"  logscan: {r.logscan:<30}  {r.verdict}" for r in rows]


def _markdown(rows: list[Row]) -> list[str]:
    head = ["| slug | kind | expected | diagnose names | logscan fatal | agrees |",
            "|---|---|---|---|---|---|"]
    return head + [f"| `{r.slug}` | {r.kind} | {r.expected} | {r.diagnose} | {r.logscan} | "
                   f"{r.verdict} |" for r in rows]


def update_index(index: Path, block: list[str]) -> None:
    """Replace what lies between the agreement markers; everything else is kept as written."""
    text = index.read_text(encoding="utf-8")
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{index}: no {BEGIN} ... {END} block to update")
    index.write_text(head + BEGIN + "\n" + "\n".join(block) + "\n" + END + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("slugs", nargs="*", help="only these files (default: all)")
    parser.add_argument("--corpus", type=Path, default=REAL, help="corpus directory")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--update-index", action="store_true",
                        help="rewrite the agreement block of the corpus's INDEX.md")
    args = parser.parse_args(argv)
    logs = sorted(args.corpus.glob("*.log"))
    if args.slugs:
        logs = [log for log in logs if log.stem in set(args.slugs)]
    rows = [judge(log) for log in logs]
    if args.update_index:
        totals = [f"- {line.strip()}" for line in _totals(rows)]
        update_index(args.corpus / "INDEX.md", [*_markdown(rows), "", *totals])
        return 0
    lines = _markdown(rows) if args.markdown else _plain(rows)
    print("\n".join([*lines, "", *_totals(rows)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
