"""The report's ladder section: the decode batch sizes against the captured CUDA-graph ladder,
as the logscan text says it, and the histogram as a table (batch, lines, graph, eager, the
size it pads to). Escaped like every host-written figure (console/share/html_text.py)."""

from __future__ import annotations

from console.logs.ladder import Ladder
from console.logs.ladder_text import ladder_lines
from console.share.html_text import escape

MAX_ROWS = 64


def ladder_html(ladder: Ladder, table_id: str) -> str:
    text = escape("\n".join(ladder_lines(ladder)))
    rows = ladder.histogram
    shown = rows if len(rows) <= MAX_ROWS else rows[-MAX_ROWS:]
    body = "".join(
        f'<tr><td class="num">{r.batch}</td><td class="num">{r.lines}</td>'
        f'<td class="num">{r.graph}</td><td class="num">{r.eager}</td>'
        f'<td class="num">{"eager" if r.runs is None else r.runs}</td></tr>' for r in shown)
    more = (f"<p>The {len(rows) - MAX_ROWS} smallest batch sizes are left out of the table."
            "</p>" if len(rows) > MAX_ROWS else "")
    return (f'<h4>Decode CUDA-graph ladder</h4><pre class="ladder">{text}</pre>{more}'
            f'<div class="scroll"><table id="{escape(table_id)}"><thead><tr><th>batch</th>'
            "<th>Decode lines</th><th>cuda graph: True</th><th>cuda graph: False</th>"
            f"<th>runs the graph</th></tr></thead><tbody>{body}</tbody></table></div>")
