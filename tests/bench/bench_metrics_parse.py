"""A /metrics page read into a MetricsSnapshot: console/logs/exposition.py's reader (what
parse_metrics uses) vs prometheus-client's text parser given the same lines (what it used
before: the page pre-filtered to SGLang's non-bucket series, then parsed), on the real pages
in tests/data/metrics/real and the simulator's 8-rank page; the console scrapes every host's
page every 5 s (64 hosts: ~7 pages a second).

    .venv/bin/python tests/bench/bench_metrics_parse.py [N]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from prometheus_client.parser import text_string_to_metric_families

from console.logs.metrics import _kept, parse_metrics
from console.sglang.metrics_names import normalise_text

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"


def prometheus_client_samples(text: str) -> int:
    """The previous path: drop unkept lines by name, then prometheus-client parses the rest."""
    kept = [line for line in normalise_text(text).splitlines()
            if line.startswith("#") or not line.strip() or _kept(line.split("{")[0].split()[0])]
    count = 0
    for family in text_string_to_metric_families("\n".join(kept) + "\n"):
        count += sum(1 for s in family.samples if _kept(s.name))
    return count


def per_call_ms(call: Callable[[str], object], text: str, n: int) -> float:
    best = float("inf")
    for _ in range(5):  # best of 5 rounds: this machine is noisy
        start = time.process_time()
        for _ in range(n):
            call(text)
        best = min(best, (time.process_time() - start) / n)
    return best * 1000


def main(n: int) -> None:
    pages = sorted((DATA / "real").glob("*.metrics")) + sorted((DATA / "sim").glob("*.metrics"))
    for page in pages:
        text = page.read_text()
        ours = per_call_ms(parse_metrics, text, n)
        theirs = per_call_ms(prometheus_client_samples, text, n)
        print(f"{page.stem:<45} {text.count(chr(10)):4d} lines  ours {ours:6.3f} ms  "
              f"prometheus-client {theirs:6.3f} ms  ratio {ours / theirs:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
