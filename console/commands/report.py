"""`plateau report RUN [RUN ...] [--html FILE] [--md [FILE]]`: a run's evidence to share, as
one self-contained HTML page (charts, diagnosis, A/B verdict, environment) or a Markdown
summary that fits in an issue comment (console/share/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.commands import argtypes
from console.errors import UsageError
from console.share.gather import gather
from console.share.report_html import report_html
from console.share.report_md import report_md
from console.store.db import RunStore


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="share stored runs: a self-contained HTML report or a Markdown summary",
        description="Two runs are reported as an A/B (B judged against A, with intervals); "
        "one run of a stored A/B pair brings its partner. Without --html or --md the "
        "Markdown goes to stdout.")
    p.add_argument("runs", nargs="+", type=argtypes.run_id, metavar="RUN")
    p.add_argument("--html", metavar="FILE", help="write the HTML report here")
    p.add_argument("--md", metavar="FILE", nargs="?", const="-",
                   help="the Markdown summary (to FILE, or stdout when none is given)")
    p.add_argument("--db", help="history database (else $PLATEAU_DB, else the user data dir)")
    p.set_defaults(handler=_handle)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _handle(args: argparse.Namespace) -> int:
    with RunStore(args.db) as store:
        try:
            report = gather(store, args.runs)
        except (KeyError, OverflowError) as exc:
            raise UsageError(f"no run {exc.args[0] if exc.args else ''} in {store.path}"
                             ) from None
    md = args.md if args.md is not None else (None if args.html else "-")
    if args.html:
        page = report_html(report)
        _write(args.html, page)
        print(f"wrote {args.html} ({len(page.encode()):,} bytes)",
              file=sys.stderr if md == "-" else sys.stdout)
    if md == "-":
        sys.stdout.write(report_md(report))
    elif md is not None:
        _write(md, report_md(report))
        print(f"wrote {md}")
    return 0
