"""The ladder as words: the report's lines (logscan, diagnose) and the one-line histogram row
against the ladder the Why view shows at 80 columns."""

from __future__ import annotations

from console.logs.ladder import Ladder, LadderProposal

_BARS = " ▁▂▃▄▅▆▇█"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _sizes(sizes: list[int] | None) -> str:
    if not sizes:
        return "not printed"
    if len(sizes) <= 12:
        return "[" + ", ".join(map(str, sizes)) + "]"
    return f"[{sizes[0]}, {sizes[1]}, ... {sizes[-2]}, {sizes[-1]}] ({len(sizes)} sizes)"


def ladder_lines(ladder: Ladder) -> list[str]:
    """The report's section: the picture, then the proposal with its cost and prediction."""
    out = [f"decode lines {ladder.decode_lines}, batch 1..{ladder.max_batch}; "
           f"captured {_sizes(ladder.ladder)}"
           + (f", {ladder.tokens_per_req} tokens per request (verify)"
              if ladder.tokens_per_req else "")]
    if ladder.lines_with_graph_field:
        out.append(f"on graphs {ladder.graph_lines}/{ladder.lines_with_graph_field} lines "
                   f"({_pct(ladder.graph_share)}), eager {ladder.eager_lines}")
    else:
        out.append("on graphs: unknown (the Decode lines print no graph field)")
    if ladder.coverage is not None:
        out.append(f"covered by the ladder {ladder.covered_lines}/{ladder.decode_lines} lines "
                   f"({_pct(ladder.coverage)}); padding waste {_pct(ladder.padding_waste)} "
                   f"({ladder.padding_slots} of {ladder.padded_slots} request slots)")
    out.append("histogram " + histogram_row(ladder, 60))
    memory = ladder.memory
    if memory is not None and memory.mem_gb is not None:
        kv = f" = {memory.kv_tokens:,} KV tokens" if memory.kv_tokens is not None else ""
        secs = f", captured in {memory.capture_s:g} s" if memory.capture_s is not None else ""
        mean = (f" ({memory.per_size_gb:.3f} GB per size on average)"
                if memory.per_size_gb is not None else "")
        out.append(f"graph memory {memory.mem_gb:g} GB{mean}{kv}{secs}")
    penalty = ladder.penalty
    if penalty is not None:
        if penalty.measured and penalty.ratio is not None:
            eager, graph = _span(penalty.eager_batches), _span(penalty.graph_batches)
            out.append(f"eager penalty x{penalty.ratio:.2f} measured ({penalty.how}: eager "
                       f"{penalty.eager_step_ms:.2f} ms/step at batch {eager} vs graph "
                       f"{penalty.graph_step_ms:.2f} ms at {graph})")
        else:
            out.append(f"eager penalty {penalty.how}")
    out += proposal_lines(ladder.proposal)
    out += [f"note: {note}" for note in ladder.notes]
    return out


def _span(pair: tuple[int, int] | None) -> str:
    if pair is None:
        return "?"
    return str(pair[0]) if pair[0] == pair[1] else f"{pair[0]}-{pair[1]}"


def proposal_lines(proposal: LadderProposal | None) -> list[str]:
    if proposal is None:
        return ["proposal: none (the ladder covers every batch the log shows, or no ladder)"]
    out = [f"proposal: {' '.join(proposal.flags)}  (SGLang {proposal.version_basis} flags)",
           f"  covers {proposal.covered_lines} lines ({_pct(proposal.coverage)}); moves "
           f"{proposal.moved_lines} eager lines to graphs; padding waste "
           f"{_pct(proposal.padding_waste)}"]
    cost = []
    if proposal.memory_gb is not None:
        cost.append(f"graph memory ~{proposal.memory_gb:.2f} GB (estimated)")
    if proposal.kv_tokens_cost is not None:
        cost.append(f"{proposal.kv_tokens_cost:,} KV tokens")
    if proposal.capture_s is not None:
        cost.append(f"capture ~{proposal.capture_s:g} s")
    if cost:
        out.append("  cost: " + ", ".join(cost) + f"; budget {proposal.budget_rule}")
    if proposal.predicted_step_gain is not None:
        decode = ("" if proposal.predicted_decode_gain is None
                  else f", {proposal.predicted_decode_gain:+.1%} over the log's decode time")
        spread = proposal.predicted_step_gain_range
        around = "" if spread is None else f" ({spread[0]:+.1%}..{spread[1]:+.1%})"
        out.append(f"  predicted: moved steps {proposal.predicted_step_gain:+.1%}{around} "
                   f"faster{decode}")
        for at in proposal.predicted_gain_at[:4]:
            out.append(f"    at batch {at.batch} ({at.lines} lines): {at.gain:+.1%} "
                       f"({at.low:+.1%}..{at.high:+.1%}), prefill in its intervals included")
    out += [f"  {note}" for note in proposal.notes]
    return out


def histogram_row(ladder: Ladder, width: int) -> str:
    """`▁▃█|▂▁ ` : decode lines by batch, one column per batch band, `|` after the band that
    holds the ceiling; bands above it are eager by the ladder."""
    if not ladder.histogram or ladder.max_batch is None:
        return "(no decode lines)"
    top = max(ladder.max_batch, ladder.ceiling or 0)
    cols = max(1, min(width - 1, top))
    counts = [0] * cols
    for row in ladder.histogram:
        counts[min(cols - 1, (row.batch - 1) * cols // top)] += row.lines
    peak = max(counts) or 1
    cells = [_BARS[0 if n == 0 else max(1, round(n * 8 / peak))] for n in counts]
    if ladder.ceiling is not None and ladder.ceiling < top:
        cut = (ladder.ceiling - 1) * cols // top + 1
        cells.insert(cut, "|")
    return "".join(cells) + f" 1..{top}"


def why_line(ladder: Ladder) -> str:
    """One line (<= 78 columns): graph share, the histogram against the ceiling, the
    proposal's flag."""
    share = "" if ladder.graph_share is None else f"graphs {ladder.graph_share:.0%} "
    ceiling = f"cap {ladder.ceiling} " if ladder.ceiling is not None else ""
    proposal = ladder.proposal
    tail = f" → {proposal.sizes[-1]}" if proposal is not None else ""
    room = 78 - len("ladder ") - len(share) - len(ceiling) - len(tail) - 10
    return f"ladder {share}{ceiling}{histogram_row(ladder, max(8, min(32, room)))}{tail}"
