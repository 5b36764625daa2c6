"""Pure rendering helpers for the GPU widgets: bars, sparklines, load levels (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from textual.content import Content

# Loading-intensity thresholds (percent), nvitop-style: below the first is "low", below the
# second "mid", else "high". Shown in the help text of the panel.
THRESHOLDS: dict[str, tuple[float, float]] = {
    "util": (10.0, 75.0),
    "mem": (10.0, 80.0),
    "power": (50.0, 90.0),
    "temp": (70.0, 85.0),  # degrees C
}


def thresholds_with_load(mid: float, high: float) -> dict[str, tuple[float, float]]:
    """THRESHOLDS with the operator's util/memory/power levels (config `ui.gpu_load_*`)."""
    return {**THRESHOLDS, "util": (mid, high), "mem": (mid, high), "power": (mid, high)}


_FALLBACK = {"low": "$success", "mid": "$warning", "high": "$error"}
_EIGHTHS = " ▏▎▍▌▋▊▉"
SPARK_UNICODE = "▁▂▃▄▅▆▇█"
SPARK_ASCII = "_.-:=+*#"


def level(
    kind: str, value: float | None, thresholds: Mapping[str, tuple[float, float]] | None = None
) -> str | None:
    if value is None:
        return None
    low, high = (thresholds or THRESHOLDS)[kind]
    if value < low:
        return "low"
    return "mid" if value < high else "high"


def load_style(level_name: str | None, variables: Mapping[str, str]) -> str:
    """`$gpu-load-<level>` when the theme defines it, else the stock success/warning/error."""
    if level_name is None:
        return "$text-muted"
    name = f"gpu-load-{level_name}"
    return f"${name}" if name in variables else _FALLBACK[level_name]


def bar(fraction: float | None, width: int, style: str, *, ascii_only: bool) -> Content:
    """A horizontal bar `width` cells wide; N/A draws an empty track."""
    width = max(1, width)
    if ascii_only:
        filled = 0 if fraction is None else round(max(0.0, min(1.0, fraction)) * width)
        return Content.assemble(("#" * filled, style), ("." * (width - filled), "$text-muted"))
    if fraction is None:
        return Content.styled("·" * width, "$text-muted")
    eighths = round(max(0.0, min(1.0, fraction)) * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part and full < width else "")
    rest = width - len(text)
    return Content.assemble((text, style), ("░" * rest, "$text-muted 40%"))


def sparkline(values: Iterable[float | None], width: int, top: float | None,
              *, ascii_only: bool) -> str:
    """The last `width` values as a one-line sparkline scaled to `top` (or their max)."""
    chars = SPARK_ASCII if ascii_only else SPARK_UNICODE
    tail = list(values)[-width:] if width > 0 else []
    known = [v for v in tail if v is not None]
    scale = top if top else (max(known) if known else 0.0)
    out = []
    for v in tail:
        if v is None:
            out.append(" ")
        elif scale <= 0:
            out.append(chars[0])
        else:
            idx = int(max(0.0, min(1.0, v / scale)) * (len(chars) - 1) + 0.5)
            out.append(chars[idx])
    return "".join(out).rjust(width)
