"""SGLang's strings (endpoint paths, `sglang:` metric names, log wordings) live in
console/sglang/ (and the engine seam's console/engines/sglang.py); the simulator imitates SGLang
and may spell them. Elsewhere code reads them from there, so a new SGLang version is taught in
one place. Docstrings (a string statement: a module's, class's or function's, or an attribute's
after it) may mention them; string constants in code may not.

console/gpu/agent.py is exempt: it is one stdlib-only file copied to the host and run there, so
it cannot import console.sglang (it names a GPU's process as SGLang's scheduler does)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("console", "widgets")
EXEMPT = ("console/sglang/", "console/engines/sglang.py", "console/sim/", "console/gpu/agent.py")
MARKERS = (
    "/generate", "/flush_cache", "/server_info", "/get_server_info", "/model_info",
    "/health_generate", "sglang:", "Decode batch", "Prefill batch", "KV cache pool is full",
    "The server is fired up",
    # the startup steps and launch failures a launching server's log shows
    # (console/sglang/launch_log.py, startup.py, server_args.py)
    "server_args=", "Load weight", "KV Cache is allocated", "Memory pool end", "Capture cuda graph",
    "Uvicorn running on", "Scheduler hit an exception", "TokenizerManager hit an exception",
)


def _documentation(tree: ast.AST) -> set[int]:
    """ids of the string constants that are a statement of their own: a module's, class's or
    function's docstring, or an attribute's docstring after it (they document, never run)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def marker_hits(path: Path, shown: str) -> list[str]:
    """`file:line: marker` for each string constant in code (f-string parts included) that holds
    a marker."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _documentation(tree)
    hits: list[str] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in skip):
            hits.extend(f"{shown}:{node.lineno}: {marker!r}"
                        for marker in MARKERS if marker in node.value)
    return sorted(hits)


def scan(root: Path) -> list[str]:
    hits: list[str] = []
    for top in SCANNED:
        for path in sorted((root / top).rglob("*.py")):
            shown = path.relative_to(root).as_posix()
            if not shown.startswith(EXEMPT):
                hits.extend(marker_hits(path, shown))
    return hits


def test_no_sglang_string_outside_its_home() -> None:
    hits = scan(ROOT)
    assert not hits, "SGLang-specific strings outside console/sglang/:\n" + "\n".join(hits)


PROBE = '''"""Reads /server_info (a module docstring may say so)."""
# and so may a comment: /flush_cache
def probe() -> str:
    """Polls /generate."""
    return "/server_info"
LIMIT = 3
"""An attribute docstring: /health_generate."""
print(f"{LIMIT} KV cache pool is full lines")
'''


def test_a_reintroduced_marker_is_named_with_its_line(tmp_path: Path) -> None:
    (tmp_path / "console" / "sglang").mkdir(parents=True)
    (tmp_path / "widgets").mkdir()
    (tmp_path / "console" / "probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "widgets" / "gauge.py").write_text('NAME = "sglang:token_usage"\n',
                                                   encoding="utf-8")
    (tmp_path / "console" / "sglang" / "home.py").write_text('PATH = "/server_info"\n',
                                                             encoding="utf-8")
    assert scan(tmp_path) == ["console/probe.py:5: '/server_info'",
                              "console/probe.py:8: 'KV cache pool is full'",
                              "widgets/gauge.py:1: 'sglang:'"]
