"""console/logs/exposition.py against prometheus-client's own text parser: the same samples
(name as prometheus-client names it, labels, value) on real SGLang pages, the simulator's page,
pages prometheus-client itself writes with hostile label values, and hand-made edge cases; the
same refusals on malformed lines."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from console.logs.exposition import samples
from console.logs.metrics import parse_metrics
from tests.support.hostile import hostile_metrics

DATA = Path(__file__).parent / "data" / "metrics"
PAGES = sorted((DATA / "real").glob("*.metrics")) + sorted((DATA / "sim").glob("*.metrics"))

Row = tuple[str, tuple[tuple[str, str], ...], float | str]


def _keep_all(_name: str) -> bool:
    return True


def _row(name: str, labels: dict[str, str], value: float) -> Row:
    number = float(value)
    return name, tuple(sorted(labels.items())), "nan" if math.isnan(number) else number


def ours(text: str) -> list[Row]:
    return [_row(s.name, s.labels, s.value) for s in samples(text, _keep_all)]


def theirs(text: str) -> list[Row]:
    rows = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            try:
                value = float(sample.value)
            except OverflowError:
                value = math.inf if sample.value > 0 else -math.inf
            rows.append(_row(sample.name, sample.labels, value))
    return rows


def test_the_real_pages_are_here() -> None:
    assert len(list((DATA / "real").glob("*.metrics"))) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_real_and_simulated_pages_read_as_prometheus_client_reads_them(page: Path) -> None:
    text = page.read_text()
    expected = theirs(text)
    assert expected  # the page has samples
    assert ours(text) == expected


EDGE_CASES = [
    'a{b="x,y}z",c="q\\"uote"} 1\n',
    'a{b="back\\\\slash",c="new\\nline",d="other\\tescape"} 2\n',
    'a{b="1",} 3\n',
    'a { b = "1" , c="2" } 4\n',
    "a 5 1712345678000\n",
    "a\t6\n",
    "  a 7\n",
    "a{} 8\n",
    "a 1e400\n",
    "a " + "9" * 400 + "\n",
    "a -Inf\na +Inf\na NaN\n",
    "# TYPE a counter\na 10\na_created 1.7e9\n",
    "# TYPE a_total counter\na_total 11\n",
    "# HELP a some text with {braces} and \"quotes\"\n# TYPE a gauge\na 12\n",
    "\n\n# just a comment\na{le=\"+Inf\"} 13\n",
    'a{b="ünïcödé ✓"} 14\n',
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_read_alike(text: str) -> None:
    assert ours(text) == theirs(text)


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "1e308", "-0", "1" + "0" * 400])
def test_hostile_values_read_alike(value: str) -> None:
    text = hostile_metrics(value)
    assert ours(text) == theirs(text)


MALFORMED = [
    "a{b=\"1\" 1\n",       # labels never closed
    "a{b=1} 1\n",          # unquoted label value
    "a 1_000\n",           # prometheus-client refuses the underscore
    "a one\n",
    'a{b="1"}\n',          # no value
    "a{b=\"x} 1\n",        # quote never closed
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_lines_are_refused_by_both(text: str) -> None:
    with pytest.raises(ValueError):
        theirs(text)
    with pytest.raises(ValueError, match="/metrics line 1"):
        ours(text)


def test_a_malformed_line_that_is_not_kept_costs_nothing() -> None:
    # Other exporters' series are skipped by name: their syntax is not ours to judge.
    page = "python_gc{x=broken 1\nsglang:num_running_reqs 3\n"
    assert parse_metrics(page).running_reqs == 3


def _random_label(rng: random.Random) -> str:
    alphabet = 'ab,}{="\\\n \t✓é' + "xyz019"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


def test_pages_prometheus_client_writes_read_alike() -> None:
    """What SGLang serves is prometheus-client's own exposition: random label values with
    quotes, braces, commas, backslashes and newlines, escaped by the writer."""
    rng = random.Random(31)
    for _ in range(40):
        registry = CollectorRegistry()
        gauge = Gauge("sglang:g", "g", ["model_name", "tp_rank"], registry=registry)
        counter = Counter("sglang:c", "c", ["model_name"], registry=registry)
        histogram = Histogram("sglang:h", "h", ["model_name"], registry=registry)
        for _ in range(rng.randint(1, 6)):
            label = _random_label(rng)
            gauge.labels(label, str(rng.randint(0, 7))).set(rng.uniform(-1e6, 1e6))
            counter.labels(label).inc(rng.uniform(0, 1e9))
            histogram.labels(label).observe(rng.expovariate(1.0))
        text = generate_latest(registry).decode("utf-8")
        assert ours(text) == theirs(text)
