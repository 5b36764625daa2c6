"""Run an older tree's simulator with the lateness measurement this tree has built in.

    python tests/bench/sim_lateness_probe.py TREE_ROOT <console.sim arguments>

For bench_sim_lateness.py's baseline: a tree from before console/sim/lateness.py existed
records nothing, so this wraps its streaming writes the same way (after each
`StreamResponse.write` of a chunk that carried new tokens: write time minus the oldest new
token's due time) and serves the same `GET /_sim/lateness`. The request being streamed is
found through a context variable set where the handler submits it (one task per handler).
"""

from __future__ import annotations

import contextvars
import importlib.util
import sys
import time
import weakref
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def _load_lateness() -> Any:
    path = HERE.parents[2] / "console" / "sim" / "lateness.py"
    spec = importlib.util.spec_from_file_location("plateau_lateness_probe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    tree, argv = sys.argv[1], sys.argv[2:]
    sys.path.insert(0, tree)
    lateness_mod = _load_lateness()
    from aiohttp import web

    from console.sim import __main__ as sim_main
    from console.sim import runner, server

    current: contextvars.ContextVar[Any] = contextvars.ContextVar("probe_req")
    sent: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
    probe: list[Any] = []

    submit = server._submit

    def probed_submit(*args: Any, **kwargs: Any) -> Any:
        req = submit(*args, **kwargs)
        current.set(req)
        return req

    server._submit = probed_submit
    original_write = web.StreamResponse.write

    async def probed_write(self: web.StreamResponse, data: Any) -> None:
        await original_write(self, data)
        req = current.get(None)
        if req is None or not probe:
            return
        before = sent.get(req, 0)
        if len(req.output_ids) > before:
            probe[0].wrote(req.created, before, time.monotonic())
            sent[req] = len(req.output_ids)

    web.StreamResponse.write = probed_write  # type: ignore[method-assign]

    async def lateness_route(request: web.Request) -> web.Response:
        body = probe[0].summary()
        if request.query.get("reset"):
            probe[0].reset()
        return web.json_response(body)

    build_app = server.build_app  # what runner.py imported; patched in its namespace below

    def probed_build_app(state: Any) -> web.Application:
        sim = state.cfg.sim
        probe.append(lateness_mod.Lateness((sim.ideal_ttft_ms or 0) / 1000,
                                           (sim.ideal_itl_ms or 0) / 1000))
        app = build_app(state)
        app.router.add_get("/_sim/lateness", lateness_route)
        return app

    runner.build_app = probed_build_app  # type: ignore[attr-defined]  # an import there
    return int(sim_main.main(argv))


if __name__ == "__main__":
    raise SystemExit(main())
