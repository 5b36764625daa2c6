"""When an open-loop step sends each request: a request-rate schedule.

SGLang 0.5.23's bench_serving (python/sglang/benchmark/serving.py `get_request`) sends the
first request at once and then sleeps `np.random.exponential(1 / request_rate)` before each
next one: Poisson arrivals; `--request-rate inf` sends them all at time 0. It has no
burstiness knob; vLLM's benchmark (vllm/benchmarks/serve.py `get_request`) draws the gaps
from a gamma distribution, shape `burstiness`, scale `1 / (request_rate * burstiness)`: the
same mean rate, burstiness 1 is Poisson, below 1 burstier, above 1 more regular. That is
what `burstiness` does here.

The whole schedule is drawn up front by the parent, then dealt to the worker processes, so
several workers together keep exactly this process.
"""

from __future__ import annotations

import math
import random

INF = math.inf


def arrival_offsets(
    rate: float,
    *,
    count: int | None,
    seconds: float | None = None,
    burstiness: float = 1.0,
    seed: int = 0,
) -> list[float]:
    """Send times in seconds after the step starts: `count` of them, or (count None) as many
    as fall inside `seconds`."""
    if rate <= 0 or burstiness <= 0:
        raise ValueError("the request rate and burstiness must be positive")
    if math.isinf(rate):
        if count is None:
            raise ValueError("an infinite request rate needs a request count")
        return [0.0] * count
    if count is None and seconds is None:
        raise ValueError("an open-loop step needs a request count or a time box")
    rng = random.Random(seed)
    scale = 1.0 / (rate * burstiness)
    offsets: list[float] = []
    t = 0.0
    while count is None or len(offsets) < count:
        if seconds is not None and t >= seconds:
            break
        offsets.append(t)
        t += rng.gammavariate(burstiness, scale)
    return offsets


def format_rate(rate: float) -> str:
    """A rate as a label: '4 req/s', '0.5 req/s', 'inf'."""
    if math.isinf(rate):
        return "inf"
    return f"{rate:g} req/s"
