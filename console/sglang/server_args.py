"""The `server_args=` startup line in both forms, read without eval.

* `server_args={'model_path': '...', 'tp_size': 1, ...}`: a dict repr of the resolved values
  (0.5.23 `srt/entrypoints/engine.py:173-174,1185`).
* `server_args=ServerArgs(model_path='...', tp_size=1, ..., cuda_graph_config=CudaGraphConfig(
  decode=PhaseConfig(backend='full', max_bs=24, bs=[1, 2, 4]), ...), cuda_graph_max_bs_decode=
  None, ...)`: the dataclass repr, every release before the dict (0.5.18 and older;
  `launch_server.py` / `engine.py` `logger.info(f"{server_args=}")`).

The dataclass form is parsed with `ast.parse(mode="eval")` and walked: a call `Name(k=v, ...)`
becomes a dict, literals go through `ast.literal_eval`; nothing is evaluated. Values that are
not literals (`<LoadFormat.AUTO: 'auto'>`, `torch.bfloat16`) are kept as their source text.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any, Literal

ServerArgsForm = Literal["dict", "dataclass"]
SERVER_ARGS = "server_args="
"""How the resolved-arguments line starts (both forms)."""
_ENUM_REPR = re.compile(r"<([\w.]+): ('[^']*'|-?\d+)>")
_MAX_CHARS = 1 << 20


def server_args_form(message: str) -> ServerArgsForm | None:
    if message.startswith("server_args={"):
        return "dict"
    if message.startswith("server_args=ServerArgs("):
        return "dataclass"
    return None


def parse_server_args(message: str) -> dict[str, Any] | None:
    """The arguments of a `server_args=...` message (after the prefix), either form; None
    when the message is not one or does not parse."""
    form = server_args_form(message)
    if form is None or len(message) > _MAX_CHARS:
        return None
    text = message[len("server_args="):].strip()
    if form == "dict":
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            value = _walk_text(text)
        return value if isinstance(value, dict) else None
    value = _walk_text(text)
    return value if isinstance(value, dict) else None


def _walk_text(text: str) -> Any:
    """Parse `text` as one expression and convert it; enum reprs become their value."""
    text = _ENUM_REPR.sub(r"\2", text)
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        return _convert(tree.body, text)
    except RecursionError:
        return None


def _convert(node: ast.expr, source: str) -> Any:
    if isinstance(node, ast.Call):
        return {kw.arg: _convert(kw.value, source) for kw in node.keywords if kw.arg}
    if isinstance(node, ast.Dict):
        return {_convert(k, source): _convert(v, source)
                for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_convert(item, source) for item in node.elts]
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.get_source_segment(source, node)


def decode_graph_ceiling(args: Mapping[str, Any]) -> int | None:
    """The largest decode batch size SGLang was told to capture a CUDA graph for, from
    whichever field the version has: `cuda_graph_config.decode.bs/max_bs` (new), then
    `cuda_graph_bs_decode` / `cuda_graph_max_bs_decode`, then the old `cuda_graph_bs` /
    `cuda_graph_max_bs`. None when unset (auto: chosen by GPU memory) or graphs are off."""
    if decode_graph_disabled(args):
        return None
    config = args.get("cuda_graph_config")
    decode = config.get("decode") if isinstance(config, Mapping) else None
    candidates: list[Any] = []
    if isinstance(decode, Mapping):
        candidates += [decode.get("bs"), decode.get("max_bs")]
    candidates += [args.get("cuda_graph_bs_decode"), args.get("cuda_graph_max_bs_decode"),
                   args.get("cuda_graph_bs"), args.get("cuda_graph_max_bs")]
    for value in candidates:
        if isinstance(value, list) and value and all(_is_int(v) for v in value):
            return int(max(value))
        if _is_int(value):
            return int(value)
    return None


def decode_graph_disabled(args: Mapping[str, Any]) -> bool | None:
    """True when the arguments turn decode CUDA graphs off (`disable_cuda_graph=True`,
    `cuda_graph_backend_decode='disabled'`, or the config's decode backend); False when they
    say graphs are on; None when they say neither."""
    config = args.get("cuda_graph_config")
    decode = config.get("decode") if isinstance(config, Mapping) else None
    backend = decode.get("backend") if isinstance(decode, Mapping) else None
    backend = backend or args.get("cuda_graph_backend_decode")
    if args.get("disable_cuda_graph") is True or backend == "disabled":
        return True
    if args.get("disable_cuda_graph") is False or isinstance(backend, str):
        return False
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def requested_running_per_rank(args: Mapping[str, Any]) -> int | None:
    """server_args' max_running_requests as each scheduler sees it: with DP attention the
    request is for the whole server and each DP rank gets its share (0.5.x scheduler.py
    `max_running_requests // dp_size`; the sizing line prints the per-rank value)."""
    asked = args.get("max_running_requests")
    if not isinstance(asked, int) or isinstance(asked, bool):
        return None
    dp = args.get("dp_size")
    if args.get("enable_dp_attention") is True and isinstance(dp, int) and dp > 1:
        return asked // dp
    return asked
