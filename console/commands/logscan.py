"""`plateau logscan FILE|-`: post-mortem of an SGLang server log copied off a host."""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from console.errors import PlateauError, file_as_usage_error
from console.logs.assembler import EventAssembler
from console.logs.bounded_lines import bounded_text_chunks
from console.logs.ladder import LadderReader
from console.logs.ladder_plan import plan
from console.logs.ladder_text import ladder_lines
from console.logs.models import Severity
from console.logs.scan import LogScanner, ScanReport
from console.logs.scan_fast import ScanPipeline
from console.logs.scan_launch import Launch
from console.sglang.batch import DECODE_BATCH
from console.sglang.startup import KV_ALLOCATED
from console.text import sanitize_lines


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "logscan",
        help="explain an SGLang log: notable events, startup phases, batch stats",
        description="Read a whole SGLang server log (or stdin with -) and print the notable "
        "events with their explanation and count, the startup phases of each launch with "
        f"durations, and a summary of the Prefill/{DECODE_BATCH} stats.",
    )
    parser.add_argument("file", metavar="FILE", help="log file, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--min-severity",
        default="info",
        choices=["debug", "info", "notable", "warn", "error"],
        help="hide notable events below this severity (default: info)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    report = scan_path(args.file)
    minimum = Severity.parse(args.min_severity)
    report.notable = [n for n in report.notable if Severity.parse(n.severity) >= minimum]
    if args.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
    else:
        # The report quotes the file's name, which any user may have chosen (ESC, BEL, C1).
        sys.stdout.write(sanitize_lines(format_report(report)))
    return 0


def scan_path(path: str) -> ScanReport:
    if path == "-":
        return _scan_readable(sys.stdin.buffer, "<stdin>")
    with file_as_usage_error(f"logscan: {path}"):
        handle = open(path, "rb")  # noqa: SIM115 - closed below; errors mapped to one line
    with handle:
        return _scan_readable(handle, path)


def _scan_readable(handle: IO[bytes], source: str) -> ScanReport:
    """scan_stream, with a read that fails (EIO, a closed or unreadable stdin) as one line."""
    try:
        return scan_stream(handle, source=source)
    except OSError as exc:
        raise PlateauError(f"logscan: {source}: cannot read: {exc.strerror or exc}") from None


def scan_stream(handle: IO[bytes], *, source: str) -> ScanReport:
    """Read, parse and scan in chunks: memory holds one chunk's lines at a time."""
    scanner = LogScanner(source)
    ladder = LadderReader()
    pipeline = ScanPipeline(scanner, EventAssembler(scanner.catalogue, source=source),
                            rows_sink=ladder.feed_rows)
    for text in bounded_text_chunks(handle):
        pipeline.feed_text(text)
    report = pipeline.finish()
    found = plan(ladder)
    report.ladder = found if found.decode_lines else None
    return report


# -- text report ----------------------------------------------------------------------------

_SEV_LABEL = {"error": "ERROR", "warn": "WARN", "notable": "NOTE", "info": "INFO",
              "debug": "DEBUG"}


def format_report(report: ScanReport) -> str:
    out: list[str] = []
    counts = report.severity_counts
    out.append(
        f"{report.source}: {report.lines} lines, {len(report.launches)} launch(es), "
        f"{counts.get('error', 0)} error and {counts.get('warn', 0)} warning events"
    )
    if report.crash is not None:
        crash = report.crash
        when = f", {crash.timestamp}" if crash.timestamp else ""
        out.append(f"CRASH: {crash.title} (line {crash.line}{when}): {crash.text[:160]}")
    out.append("")
    out.append("Notable events")
    if not report.notable:
        out.append("  none")
    for item in report.notable:
        where = f"line {item.first_line}"
        if item.first_timestamp:
            where += f", {item.first_timestamp}"
        if item.count > 1:
            where += f"; last line {item.last_line}"
        out.append(f"  {_SEV_LABEL[item.severity]:<5} x{item.count:<4} {item.title}  ({where})")
        out.append(f"               {item.example[:160]}")
        out.append(f"        why:   {item.explanation}")
        out.append(f"        do:    {item.action}")
    if report.other:
        out.append("")
        out.append("Other warnings and errors (not in the catalogue)")
        for other in report.other[:15]:
            out.append(
                f"  {_SEV_LABEL[other.severity]:<5} x{other.count:<4} line {other.first_line}: "
                f"{other.example[:140]}"
            )
    for launch in report.launches:
        out.append("")
        head = f"Launch {launch.index} (line {launch.start_line}"
        if launch.start_timestamp:
            head += f", {launch.start_timestamp}"
        head += f"): {launch.outcome}"
        if launch.fatal:
            head += f" ({launch.fatal})"
        if launch.startup_seconds is not None:
            head += f", ready after {launch.startup_seconds:.1f} s"
        out.append(head)
        for phase in launch.phases:
            note = "" if phase.source == "timestamps" else "  (SGLang's elapsed)"
            out.append(
                f"  {phase.name:<22} {phase.seconds:>8.2f} s   line {phase.start_line}{note}"
            )
        if not launch.phases:
            out.append("  no startup phases in this part of the log")
        out.extend(_launch_facts(launch, _capture_failed(report, launch)))
    if report.exceptions:
        out.append("")
        out.append("Exceptions (the last line of each traceback)")
        for exc in report.exceptions[:15]:
            mark = "  [GPU out of memory]" if exc.oom else ""
            out.append(f"  line {exc.line}: {exc.text[:160]}{mark}")
    batches = report.batches
    out.append("")
    out.append(
        f"Batch stats ({batches.decode_lines} decode lines, {batches.prefill_lines} prefill lines)"
    )
    if batches.decode_lines or batches.prefill_lines:
        if batches.peak_gen_throughput is not None:
            out.append(
                f"  peak gen throughput   {batches.peak_gen_throughput:,.2f} tok/s "
                f"(line {batches.peak_gen_line}, {batches.peak_gen_timestamp})"
            )
        if batches.mean_gen_throughput is not None:
            out.append(f"  mean gen throughput   {batches.mean_gen_throughput:,.2f} tok/s "
                       "(decode lines with running requests)")
        if batches.decode_lines_not_rate:
            out.append(f"  not a rate            {batches.decode_lines_not_rate} decode line(s) "
                       "right after idle (their window spans the idle time; not counted)")
        if batches.peak_input_throughput is not None:
            out.append(f"  peak input throughput {batches.peak_input_throughput:,.2f} tok/s")
        out.append(f"  max running requests  {_fmt(batches.max_running_reqs)}")
        out.append(f"  max queued requests   {_fmt(batches.max_queue_reqs)}")
        out.append(f"  max token usage       {_fmt(batches.max_token_usage)}")
        if batches.mean_accept_len is not None:
            out.append(f"  mean accept len       {batches.mean_accept_len}")
        node = batches.node
        if node is not None:
            names = ", ".join(batches.dp_ranks[:8]) + ("..." if len(batches.dp_ranks) > 8 else "")
            out.append(f"  DP ranks              {len(batches.dp_ranks)} ({names}); "
                       "figures above are per rank")
            out.append(f"  node max running      {_fmt(node.max_running_reqs)} "
                       "(the ranks summed per timestamp)")
            if node.peak_gen_throughput is not None:
                out.append(f"  node peak gen         {node.peak_gen_throughput:,.2f} tok/s "
                           f"({node.peak_gen_timestamp})")
            if node.mean_gen_throughput is not None:
                out.append(f"  node mean gen         {node.mean_gen_throughput:,.2f} tok/s")
            if node.busiest_rank is not None:
                ratio = "n/a" if node.rank_imbalance is None else f"{node.rank_imbalance}x"
                out.append(f"  rank imbalance        {ratio}: mean #running-req "
                           f"{node.rank_running_mean_max} on {node.busiest_rank}, "
                           f"{node.rank_running_mean_min} on {node.idlest_rank}")
        if batches.decode_lines and not batches.decode_lines_with_graph:
            out.append("  cuda graph            unknown (these decode lines have no graph field)")
        elif batches.cuda_graph_off:
            out.append(f"  cuda graph off        {len(batches.cuda_graph_off)} period(s):")
            for period in batches.cuda_graph_off[:10]:
                out.append(
                    f"    lines {period.start_line}-{period.end_line} "
                    f"({period.start_timestamp} - {period.end_timestamp}), "
                    f"{period.decode_lines} decode line(s)"
                )
        else:
            out.append("  cuda graph off        never (in decode lines)")
    if report.ladder is not None:
        out.append("")
        out.append("Decode CUDA-graph ladder (batch sizes against the captured sizes)")
        out += [f"  {line}" for line in ladder_lines(report.ladder)]
    return "\n".join(out) + "\n"


def _capture_failed(report: ScanReport, launch: Launch) -> int | None:
    """The line where this launch's CUDA-graph capture failed, if it did."""
    crash = report.crash
    if crash is None or crash.kind != "capture" or crash.line < launch.start_line:
        return None
    later = [other.start_line for other in report.launches if other.start_line > launch.start_line]
    return crash.line if not later or crash.line < min(later) else None


def _launch_facts(launch: Launch, capture_failed: int | None = None) -> list[str]:
    """What SGLang resolved at startup, requested -> effective where a clamp shows both; after
    a failed capture, the sizes it tried are not in effect."""
    out: list[str] = []
    if capture_failed is not None:
        tried = (f"bs {launch.captured_decode_bs[0]}..{launch.captured_decode_bs[-1]} tried; "
                 if launch.captured_decode_bs else "")
        out.append(f"  decode CUDA graphs     {tried}capture failed (line {capture_failed}): "
                   "none in effect")
    elif launch.captured_decode_bs:
        sizes = launch.captured_decode_bs
        asked = launch.decode_graph_requested
        out.append(f"  decode CUDA graphs     bs {sizes[0]}..{sizes[-1]} ({len(sizes)} sizes, "
                   f"{launch.capture_wording} wording)"
                   + (f"; max bs {asked} -> {sizes[-1]} (server_args -> captured)"
                      if asked is not None else ""))
    elif launch.captured_decode_count is not None:
        seen = ", ".join(str(bs) for bs in launch.captured_decode_seen or [])
        ceiling = launch.decode_graph_ceiling
        largest = (f"largest bs {ceiling}" if ceiling in (launch.captured_decode_seen or [])
                   else "the largest not in this log")
        out.append(f"  decode CUDA graphs     {launch.captured_decode_count} sizes (tqdm count; "
                   f"this log shows bs {seen} of them, captured largest first: {largest})")
    elif launch.decode_graph_ceiling is not None:
        out.append(f"  decode CUDA graphs     up to bs {launch.decode_graph_ceiling} "
                   "(server_args; no capture sizes in this log)")
    if launch.cuda_graph_disabled:
        out.append("  decode CUDA graphs     disabled (server_args)")
    if launch.max_running_requests is not None:
        asked = launch.max_running_requests_requested
        value = (f"{asked} -> {launch.max_running_requests}"
                 if asked is not None and asked != launch.max_running_requests
                 else f"{launch.max_running_requests}")
        out.append(f"  max running requests   {value}")
    if launch.chunked_prefill_size is not None:
        asked_chunk = launch.chunked_prefill_size_requested
        out.append("  chunked prefill size   " + (
            f"{asked_chunk} -> {launch.chunked_prefill_size}" if asked_chunk is not None
            else f"{launch.chunked_prefill_size}"))
    if launch.max_total_num_tokens is not None:
        out.append(f"  KV cache tokens        {launch.max_total_num_tokens}")
    if (launch.kv_allocated_tokens is not None
            and launch.kv_allocated_tokens != launch.max_total_num_tokens):
        out.append(f"  KV cache allocated     {launch.kv_allocated_tokens} tokens "
                   f"({KV_ALLOCATED})")
    return out


def _fmt(value: float | int | None) -> str:
    return "n/a" if value is None else f"{value}"
