"""The all-reduce probe on a host: ship console/gpu/allreduce_probe.py (content-addressed,
`Transport.install_program`), run it as an argv list with the model's decode message sizes
(hidden size x the sweep's levels x dtype), bounded in time, and read its one JSON object as
untrusted: at most MAX_OUTPUT bytes, every field checked (pydantic), numbers finite and
non-negative, text sanitised and cut. What it could not measure (one GPU, no torch, no NCCL)
comes back in `cannot`, said as it was; the layout duel then estimates the all-reduce cost from
the diagnosis's priors over the measured step times, and says so.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import ValidationError, field_validator

from console.diagnose.models import Frozen  # extra fields ignored, frozen
from console.errors import TransportError
from console.host.transport import Transport
from console.text import sanitize

PROBE = Path(__file__).resolve().parent.parent / "gpu" / "allreduce_probe.py"
MAX_OUTPUT = 256 * 1024
GRACE_S = 30.0  # the transport's limit beyond the probe's own budget


class RankRow(Frozen):
    ranks: int
    bytes: int
    nccl_eager_us: float | None = None
    nccl_graph_us: float | None = None
    one_shot_us: float | None = None

    @field_validator("nccl_eager_us", "nccl_graph_us", "one_shot_us")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value < 0):
            raise ValueError("not a finite non-negative time")
        return value


class RankSet(Frozen):
    ranks: int
    rows: list[RankRow] = []
    why: str = ""


class ProbeReport(Frozen):
    version: int = 1
    hidden: int
    dtype: str
    messages: list[dict[str, int]] = []
    cannot: list[str] = []
    torch: str | None = None
    nccl: str | None = None
    allreduce: list[RankSet] = []
    single_gpu: dict[str, object] | None = None
    error: str = ""  # set here, not by the probe: why the report is empty

    def measured_us(self, nbytes: int) -> dict[int, float]:
        """Per GPU count, NCCL's all-reduce at the message nearest `nbytes` (graph-captured
        where it could be, as SGLang's decode runs it)."""
        out: dict[int, float] = {}
        for ranks in self.allreduce:
            rows = [r for r in ranks.rows if (r.nccl_graph_us or r.nccl_eager_us) is not None]
            if rows:
                row = min(rows, key=lambda r: abs(r.bytes - nbytes))
                value = row.nccl_graph_us or row.nccl_eager_us
                if value is not None:
                    out[ranks.ranks] = value
        return out


def probe_argv(python: str, program: str, hidden: int, batches: list[int], dtype: str,
               seconds: float) -> list[str]:
    return [python, program, "--hidden", str(int(hidden)),
            "--batches", ",".join(str(int(b)) for b in batches), "--dtype", dtype,
            "--seconds", f"{seconds:g}"]


def parse_report(stdout: str, hidden: int, dtype: str) -> ProbeReport:
    """The probe's last output line as a report; an empty one with `error` when it is not."""
    if len(stdout) > MAX_OUTPUT:
        return ProbeReport(hidden=hidden, dtype=dtype,
                           error=f"the probe wrote more than {MAX_OUTPUT} bytes")
    lines = [line for line in stdout.splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
        report = ProbeReport.model_validate(data)
    except (ValueError, ValidationError) as exc:
        said = sanitize(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)[:200]
        return ProbeReport(hidden=hidden, dtype=dtype, error=f"unreadable output: {said}")
    return report.model_copy(update={"cannot": [sanitize(c)[:300] for c in report.cannot]})


async def run_probe(transport: Transport, python: str, hidden: int, batches: list[int],
                    dtype: str = "bfloat16", seconds: float = 120.0) -> ProbeReport:
    program = await transport.install_program("plateau-allreduce-probe", PROBE.read_text())
    argv = probe_argv(python, program, hidden, batches, dtype, seconds)
    try:
        result = await transport.run(argv, timeout=seconds + GRACE_S)
    except TransportError as exc:  # a timeout, or the host went away
        said = sanitize(str(exc).splitlines()[0] if str(exc) else "transport error")[:200]
        return ProbeReport(hidden=hidden, dtype=dtype, error=f"the probe did not finish: {said}")
    if not result.ok:
        tail = sanitize(result.stderr.strip().splitlines()[-1] if result.stderr.strip()
                        else f"exit {result.exit_status}")[:200]
        return ProbeReport(hidden=hidden, dtype=dtype, error=f"the probe failed: {tail}")
    return parse_report(result.stdout, hidden, dtype)


def probe_summary(report: ProbeReport) -> list[str]:
    """What the probe measured and what it could not, in lines."""
    if report.error:
        return [f"all-reduce probe: {report.error}; estimated from priors over the step times"]
    lines = []
    for ranks in report.allreduce:
        if ranks.why:
            lines.append(f"all-reduce over {ranks.ranks} GPUs: {sanitize(ranks.why)[:200]}")
        for row in ranks.rows:
            lines.append(f"all-reduce over {row.ranks} GPUs, {row.bytes} B: NCCL "
                         f"{_us(row.nccl_graph_us)} in a graph ({_us(row.nccl_eager_us)} "
                         f"eager), one-shot {_us(row.one_shot_us)}")
    lines += [f"all-reduce probe could not: {c}" for c in report.cannot]
    if not report.allreduce:
        lines.append("all-reduce costs: estimated from priors over the step times")
    return lines


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} us"
