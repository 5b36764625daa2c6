"""Per-GPU panel: one row per GPU with util/memory/power bars, temperature, clocks, throttle
badge, PCIe link and rate, and a history sparkline of a metric the user picks.

The widget does no I/O: the app feeds it `update_header(header)` once per connection and
`update_sample(sample)` per tick. Rows are mounted once and re-rendered in place.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from console.gpu import format as fmt
from console.gpu.na import NA
from console.text import sanitize
from widgets.gpu_render import (
    THRESHOLDS,
    bar,
    level,
    load_style,
    sparkline,
    thresholds_with_load,
)

if TYPE_CHECKING:  # the GPU models come with the first sample (console/gpu/na.py)
    from console.gpu.models import GpuHeader, GpuReading, GpuSample

HistoryMetric = Literal["util", "power", "memory", "pcie"]
HISTORY_METRICS: tuple[HistoryMetric, ...] = ("util", "power", "memory", "pcie")
HISTORY_LEN = 240
# Narrower than this (two columns on a small terminal) a row drops to its essentials.
MINI_ROW_WIDTH = 60


class GpuHistory:
    """Ring buffers of the pickable metrics for one GPU."""

    def __init__(self, length: int = HISTORY_LEN) -> None:
        self.series: dict[HistoryMetric, deque[float | None]] = {
            m: deque(maxlen=length) for m in HISTORY_METRICS
        }

    def add(self, r: GpuReading) -> None:
        self.series["util"].append(r.util_gpu)
        self.series["power"].append(r.power_pct)
        self.series["memory"].append(r.mem_pct)
        self.series["pcie"].append(r.pcie_bytes_s)


class GpuRow(Widget):
    """One GPU. Height 1 (compact) or 3 (full); rendered from its latest reading."""

    DEFAULT_CSS = """
    GpuRow { height: 1; width: 1fr; }
    GpuRow.-full { height: 3; }
    """

    def __init__(self, panel: GpuPanel, index: int) -> None:
        super().__init__(classes="gpu-row")
        self.panel = panel
        self.index = index
        self.reading: GpuReading | None = None

    def show(self, reading: GpuReading) -> None:
        self.reading = reading
        self.fit_height()
        self.refresh()

    def fit_height(self) -> None:
        """Full rows grow by their process lines; compact rows and the grid keep the CSS
        height."""
        extra = 0
        if self.reading is not None and shows_processes(self.panel) and self.reading.processes:
            shown = min(MAX_PROCESS_LINES, len(self.reading.processes))
            extra = 1 + shown + (1 if len(self.reading.processes) > shown else 0)
        self.styles.height = 3 + extra if extra else None

    def render(self) -> Content:
        if self.reading is None:
            return Content(f"{self.index:>2} waiting for the first sample…")
        width = self.size.width or 80
        if self.panel.compact:
            if width < MINI_ROW_WIDTH:
                return mini_line(self.reading, self.panel, width)
            return compact_line(self.reading, self.panel, width)
        return full_lines(self.reading, self.panel, width)


def _variables(widget: Widget) -> dict[str, str]:
    try:
        return widget.app.theme_variables
    except Exception:  # not mounted yet
        return {}


def _num_style(
    kind: str, value: float | None, variables: dict[str, str], panel: GpuPanel
) -> str:
    return load_style(level(kind, value, panel.thresholds), variables)


def _history(panel: GpuPanel, r: GpuReading, width: int) -> str:
    hist = panel.histories.get(r.index)
    if hist is None or width <= 0:
        return ""
    metric = panel.history_metric
    top = None if metric == "pcie" else 100.0
    return sparkline(hist.series[metric], width, top, ascii_only=panel.ascii_only)


@dataclass(frozen=True)
class CompactLayout:
    """Column widths of a compact row at one width: shared by the rows and the header row,
    so the header's words sit over their columns."""

    wide: bool
    name_w: int
    mem_w: int
    power_w: int
    clock_w: int
    bar_w: int
    spark_w: int
    nvlink: bool


PCIE_W = 13
NVLINK_W = 14


def compact_layout(width: int, nvlink: bool) -> CompactLayout:
    wide = width >= 110
    name_w = 18 if wide else 0
    mem_w, power_w, clock_w = (12, 9, 7) if wide else (4, 5, 4)
    fixed = 2 + 1 + (name_w + 1 if name_w else 0) + 5 + 1 + mem_w + 1
    fixed += power_w + 1 + 4 + 1 + clock_w + 1 + 5 + 1 + PCIE_W + 1
    if nvlink:
        fixed += NVLINK_W + 1
    free = max(9, width - fixed)
    # Leave the sparkline at least ~10 cells before growing the bars.
    bar_w = max(3, min(20, (free - 12) // 3))
    spark_w = max(0, width - fixed - 3 * bar_w - 3)
    return CompactLayout(wide, name_w, mem_w, power_w, clock_w, bar_w, spark_w, nvlink)


def history_label(metric: str, width: int) -> str:
    """The history column's title, whole words only: the metric is what it must name ("history:
    ut" named none; issue 26.5)."""
    for label in (f"history: {metric}", f"hist {metric}", metric):
        if len(label) <= width:
            return label
    return metric[:width]


def compact_header(panel: GpuPanel, width: int) -> Content:
    """Column names over compact rows (nvitop's header row); empty when rows are full."""
    if width < MINI_ROW_WIDTH:
        return mini_header(panel, width)
    lay = compact_layout(width, panel.has_nvlink)
    parts = [" #" + " "]
    if lay.name_w:
        parts.append("NAME".ljust(lay.name_w) + " ")
    parts += [
        "UTIL".ljust(lay.bar_w + 6),
        "MEM".ljust(lay.bar_w + 1 + lay.mem_w + 1),
        "POWER".ljust(lay.bar_w + 1 + lay.power_w + 1),
        "TEMP" + " ",
        ("SM MHz" if lay.wide else "SM").ljust(lay.clock_w) + " ",
        "THROT" + " ",
        ("PCIe rx/tx" if not panel.ascii_only else "PCIe r/t").ljust(PCIE_W) + " ",
    ]
    if lay.nvlink:
        parts.append("NVLink rx/tx".ljust(NVLINK_W) + " ")
    if lay.spark_w:
        parts.append(history_label(panel.history_metric, lay.spark_w))
    return Content.styled("".join(parts), "bold $text-muted").truncate(width)


def compact_line(r: GpuReading, panel: GpuPanel, width: int) -> Content:
    v = _variables(panel)
    a = panel.ascii_only
    lay = compact_layout(width, panel.has_nvlink)
    wide = lay.wide
    mem_text = fmt.mem(r).rjust(lay.mem_w) if wide else fmt.pct(r.mem_pct).rjust(lay.mem_w)
    power_text = (fmt.watts(r) if wide else (NA if r.power_w is None else f"{r.power_w:.0f}W"))
    power_text = power_text.rjust(lay.power_w)
    temp_text = NA if r.temp_c is None else f"{r.temp_c:.0f}{'C' if a else '°'}"
    temp_text = temp_text.rjust(4)
    clock_text = fmt.mhz(r.sm_clock_mhz).rjust(4) + ("MHz" if wide else "")
    badge = fmt.throttle_badge(r)
    badge_text = (badge or "").ljust(5)[:5]
    rates = fmt.pcie_rates(r, ascii_only=a)
    pcie_text = (rates if rates != NA else "PCIe N/A").ljust(PCIE_W)
    bar_w = lay.bar_w
    util_l = level("util", r.util_gpu, panel.thresholds)
    parts: list[Content | str | tuple[str, str]] = [f"{r.index:>2} "]
    if lay.name_w:
        parts.append((fmt.short_name(r.name)[: lay.name_w].ljust(lay.name_w) + " ", "bold"))
    parts += [
        bar(_frac(r.util_gpu), bar_w, load_style(util_l, v), ascii_only=a),
        (fmt.pct(r.util_gpu).rjust(5) + " ", load_style(util_l, v)),
        bar(_frac(r.mem_pct), bar_w, _num_style("mem", r.mem_pct, v, panel), ascii_only=a),
        " " + mem_text + " ",
        bar(_frac(r.power_pct), bar_w, _num_style("power", r.power_pct, v, panel), ascii_only=a),
        " " + power_text + " ",
        (temp_text, _num_style("temp", r.temp_c, v, panel)),
        " " + clock_text + " ",
        (badge_text, "bold $error" if badge and badge != NA else "$text-muted"),
        " " + pcie_text + " ",
    ]
    if lay.nvlink:
        nvl = fmt.nvlink_rates(r, ascii_only=a)
        parts.append(((nvl if nvl != NA else "NVLink N/A").ljust(NVLINK_W) + " ", "$accent"))
    if lay.spark_w > 0:
        parts.append((_history(panel, r, lay.spark_w), "$accent"))
    return Content.assemble(*parts).truncate(width)


@dataclass(frozen=True)
class MiniLayout:
    util_w: int
    mem_w: int
    badge_w: int
    spark_w: int


def mini_layout(width: int) -> MiniLayout:
    # "NN!" + bar + " 100%" + " " + bar + " 100%" + " 9999W" + " 99°" (+ " BADGE")
    fixed = 3 + 5 + 1 + 5 + 6 + 5
    badge_w = 6 if width - fixed >= 20 else 0
    room = max(4, width - fixed - badge_w)
    spark_w = max(0, room - 20) if room >= 26 else 0
    bar_room = room - (spark_w + 1 if spark_w else 0)
    util_w = max(2, min(12, (bar_room + 1) // 2))
    mem_w = max(2, min(12, bar_room - util_w))
    return MiniLayout(util_w, mem_w, badge_w, spark_w)


def mini_header(panel: GpuPanel, width: int) -> Content:
    lay = mini_layout(width)
    text = " # " + "UTIL".ljust(lay.util_w + 5) + " " + "MEM".ljust(lay.mem_w + 5)
    text += " " + "POWER" + " " + "TEMP"
    if lay.badge_w:
        text += " THROT"[: lay.badge_w].ljust(lay.badge_w)
    if lay.spark_w:
        text += " " + panel.history_metric[: lay.spark_w]
    return Content.styled(text, "bold $text-muted").truncate(width)


def mini_line(r: GpuReading, panel: GpuPanel, width: int) -> Content:
    """A row for half a small terminal: util and memory bars, power, temperature, a `!` after
    the index when throttled (the reason too when there is room), the history sparkline when
    there is more. Every row of one width has the same columns, so two columns stay aligned."""
    v = _variables(panel)
    a = panel.ascii_only
    power_text = (NA if r.power_w is None else f"{r.power_w:.0f}W").rjust(5)
    temp_text = (NA if r.temp_c is None else f"{r.temp_c:.0f}{'C' if a else '°'}").rjust(4)
    badge = fmt.throttle_badge(r)
    throttled = bool(badge) and badge != NA
    lay = mini_layout(width)
    util_s = _num_style("util", r.util_gpu, v, panel)
    mem_s = _num_style("mem", r.mem_pct, v, panel)
    parts: list[Content | str | tuple[str, str]] = [
        f"{r.index:>2}",
        ("!" if throttled else " ", "bold $error"),
        bar(_frac(r.util_gpu), lay.util_w, util_s, ascii_only=a),
        (fmt.pct(r.util_gpu).rjust(5), util_s),
        " ",
        bar(_frac(r.mem_pct), lay.mem_w, mem_s, ascii_only=a),
        (fmt.pct(r.mem_pct).rjust(5), mem_s),
        (" " + power_text, _num_style("power", r.power_pct, v, panel)),
        (" " + temp_text, _num_style("temp", r.temp_c, v, panel)),
    ]
    if lay.badge_w:
        parts.append(((" " + badge[:5] if throttled else "").ljust(lay.badge_w), "bold $error"))
    if lay.spark_w > 0:
        parts += [" ", (_history(panel, r, lay.spark_w), "$accent")]
    return Content.assemble(*parts).truncate(width)


def _frac(pct_value: float | None) -> float | None:
    return None if pct_value is None else pct_value / 100.0


def full_lines(r: GpuReading, panel: GpuPanel, width: int) -> Content:
    v = _variables(panel)
    a = panel.ascii_only
    name = fmt.short_name(r.name)
    head_w = 3 + min(22, len(name)) + 1
    label_w = 4 + 1 + 5 + 1  # "util " + "100% "
    fixed = head_w + 3 * label_w + 12 + 10 + 4
    bar_w = max(4, min(30, (width - fixed) // 3))
    util_s = _num_style("util", r.util_gpu, v, panel)
    mem_s = _num_style("mem", r.mem_pct, v, panel)
    line1 = Content.assemble(
        f"{r.index:>2} ", (name[:22] + " ", "bold"),
        "util ", bar(_frac(r.util_gpu), bar_w, util_s, ascii_only=a),
        (fmt.pct(r.util_gpu).rjust(5), util_s),
        "  mem ", bar(_frac(r.mem_pct), bar_w, mem_s, ascii_only=a),
        " " + fmt.mem(r),
        "  pwr ",
        bar(_frac(r.power_pct), bar_w, _num_style("power", r.power_pct, v, panel), ascii_only=a),
        " " + fmt.watts(r),
    ).truncate(width)
    badge = fmt.throttle_badge(r)
    # Most telling first: at 80 columns the tail of this line is cut off.
    bits: list[Content | str | tuple[str, str]] = [
        "   ", (fmt.temp(r, ascii_only=a), _num_style("temp", r.temp_c, v, panel)),
        f"  SM {fmt.clocks(r)}  ",
        (f"throttle: {fmt.throttle_words(r)}",
         "bold $error" if badge and badge != NA else "$text-muted"),
        "  PCIe ",
        (fmt.pcie_link(r), "bold $warning" if r.pcie_downtrained else ""),
        f" {fmt.pcie_rates(r, ascii_only=a)}",
    ]
    if r.nvlink_tx_bytes_s is not None or r.nvlink_rx_bytes_s is not None:
        # Arrows as on the compact row: short enough to stay within 100 columns.
        bits.append(f"  NVLink {fmt.nvlink_rates(r, ascii_only=a)}")
    if r.gpm is not None:
        g = r.gpm
        bits.append(
            f"  SM occ {fmt.pct(g.sm_occupancy)} tensor {fmt.pct(g.tensor_util)} "
            f"DRAM {fmt.pct(g.dram_bw_util)}"
        )
    bits.append(f"  mem {fmt.mhz(r.mem_clock_mhz)}/{fmt.mhz(r.mem_clock_max_mhz)}MHz")
    if r.mem_temp_c is not None:
        bits.append(f" {r.mem_temp_c:.0f}{'C' if a else '°C'}")
    bits.append(f"  {r.pstate or NA}")
    procs = "N/A" if r.processes is None else str(len(r.processes))
    ecc = NA if r.ecc_uncorrected is None else str(r.ecc_uncorrected)
    bits.append(f"  procs {procs}  ECC unc {ecc}")
    if r.xid_count:
        bits.append(("  XID " + ",".join(str(x) for x in r.xid_new[-3:]) or "  XID", "$error"))
    bits.append(f"  fan {fmt.pct(r.fan_pct)}")
    line2 = Content.assemble(*bits).truncate(width)
    label = f"   {panel.history_metric:<6} "
    spark = _history(panel, r, max(0, width - len(label)))
    line3 = Content.assemble(label, (spark, "$accent"))
    return Content("\n").join([line1, line2, line3, *process_lines(r, panel, width)])


MAX_PROCESS_LINES = 4


def shows_processes(panel: GpuPanel) -> bool:
    """Processes are listed under full rows laid out one a line (a two-a-line grid has fixed
    row heights)."""
    return not panel.compact and not panel.has_class("-two-col")


def process_lines(r: GpuReading, panel: GpuPanel, width: int) -> list[Content]:
    """The GPU's compute processes, as nvitop lists them: pid, user, GPU memory, command.
    The operator's own (same user as the agent on the host) in normal text, others muted."""
    if not shows_processes(panel) or not r.processes:
        return []
    own_uid = panel.header.host.uid if panel.header is not None else None
    lines = [Content.styled(
        f"   {'PID':>8} {'USER':<10} {'GPU MEM':>8}  COMMAND", "bold $text-muted"
    ).truncate(width)]
    for p in r.processes[:MAX_PROCESS_LINES]:
        user = p.user or (str(p.uid) if p.uid is not None else NA)
        used = NA if p.used_mib is None else f"{p.used_mib / 1024:.1f}G"
        command = p.cmd or p.name or NA
        mine = own_uid is not None and p.uid == own_uid
        text = f"   {p.pid:>8} {user[:10]:<10} {used:>8}  {command}"
        lines.append(Content.styled(text, "" if mine else "$text-muted").truncate(width))
    more = len(r.processes) - MAX_PROCESS_LINES
    if more > 0:
        lines.append(Content.styled(f"   … {more} more", "$text-muted"))
    return lines


class GpuColumns(Widget):
    """The column-header row over compact GPU rows (two copies side by side when the rows
    are laid out two a line). Hidden while rows are full (their lines carry labels)."""

    DEFAULT_CSS = """
    GpuColumns { height: 1; width: 1fr; }
    """

    def __init__(self, panel: GpuPanel) -> None:
        super().__init__(id="gpu-columns")
        self.panel = panel

    def render(self) -> Content:
        width = self.size.width or 80
        if not self.panel.has_class("-two-col"):
            return compact_header(self.panel, width)
        col = (width - 2) // 2
        return Content.assemble(compact_header(self.panel, col).truncate(col, pad=True), "  ",
                                compact_header(self.panel, col)).truncate(width)


class GpuPanel(Widget, can_focus=True):
    """All GPUs of one host."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "cycle_metric", "History metric"),
        Binding("v", "toggle_compact", "Compact/full"),
        Binding("t", "topology", "Topology"),
    ]

    DEFAULT_CSS = """
    GpuPanel { height: auto; max-height: 100%; width: 1fr; }
    GpuPanel > #gpu-summary {
        height: 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
    }
    GpuPanel > VerticalScroll {
        height: auto; max-height: 100%; scrollbar-size-vertical: 1;
    }
    GpuPanel.-full > #gpu-columns { display: none; }
    GpuPanel.-no-columns > #gpu-columns { display: none; }
    /* Two GPUs a line (fit(columns=2)): a small terminal still sees all eight. */
    GpuPanel.-two-col > VerticalScroll {
        layout: grid; grid-size: 2; grid-columns: 1fr 1fr; grid-gutter: 0 2; grid-rows: 1;
    }
    GpuPanel.-two-col.-full > VerticalScroll { grid-rows: 3; }
    """

    compact: reactive[bool] = reactive(True)
    ascii_only: reactive[bool] = reactive(False)
    history_metric: reactive[HistoryMetric] = reactive("util")

    class TopologyRequested(Message):
        """The user pressed the topology key; the app shows a TopologyView."""

    def __init__(
        self,
        *,
        compact: bool = True,
        ascii_only: bool = False,
        history_metric: HistoryMetric = "util",
        load_thresholds: tuple[float, float] | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.set_reactive(GpuPanel.compact, compact)
        self.set_reactive(GpuPanel.ascii_only, ascii_only)
        self.set_reactive(GpuPanel.history_metric, history_metric)
        self.header: GpuHeader | None = None
        self.sample: GpuSample | None = None
        self.histories: dict[int, GpuHistory] = {}
        self.rows: dict[int, GpuRow] = {}
        self.thresholds = (
            thresholds_with_load(*load_thresholds) if load_thresholds else dict(THRESHOLDS)
        )
        self._composed = False
        self._max_rows: int | None = None
        self.failure: str | None = None  # why the GPU agent failed (it is retried)

    def compose(self) -> ComposeResult:
        yield Static("GPUs: waiting for the agent…", id="gpu-summary", markup=False)
        yield GpuColumns(self)
        yield VerticalScroll(id="gpu-rows")

    @property
    def has_nvlink(self) -> bool:
        """The host has NVLink (its header lists links, or samples carry NVLink rates): the
        compact rows then show the NVLink rate beside PCIe's."""
        if self.header is not None and self.header.nvlink:
            return True
        return self.sample is not None and fmt.has_nvlink_rates(self.sample)

    # -- data in ---------------------------------------------------------------------------

    def show_failure(self, failure: str | None) -> None:
        """Say why the agent failed, in the summary line, until samples come again."""
        if failure != self.failure:
            self.failure = failure
            self._refresh_summary()

    def update_header(self, header: GpuHeader) -> None:
        self.header = header
        self._refresh_summary()

    def update_sample(self, sample: GpuSample) -> None:
        """Show one tick. Rows are mounted only when the set of GPUs changes."""
        self.sample = sample
        for r in sample.gpus:
            self.histories.setdefault(r.index, GpuHistory()).add(r)
        indices = [r.index for r in sample.gpus]
        if list(self.rows) != indices and self._composed:
            self._remount(indices)
        for r in sample.gpus:
            row = self.rows.get(r.index)
            if row is not None:
                row.show(r)
        self._refresh_summary()

    def _remount(self, indices: list[int]) -> None:
        container = self.query_one("#gpu-rows", VerticalScroll)
        for row in self.rows.values():
            row.remove()
        self.rows = {i: GpuRow(self, i) for i in indices}
        for row in self.rows.values():
            row.set_class(not self.compact, "-full")
        container.mount_all(self.rows.values())

    def fit(
        self, *, columns: int = 1, max_rows: int | None = None, header: bool = True
    ) -> None:
        """Lay the GPU rows out in `columns` (1 or 2) and show at most `max_rows` terminal
        rows of them (the rest scroll); the summary line stays on top, the column-header row
        under it when `header`. Set by the screen that knows how much room the panel has."""
        self.set_class(columns >= 2, "-two-col")
        self.set_class(not header, "-no-columns")
        self._max_rows = max_rows
        if self._composed:
            self.query_one("#gpu-rows", VerticalScroll).styles.max_height = (
                max_rows if max_rows is not None else "100%"
            )
        for row in self.rows.values():
            row.fit_height()
            row.refresh()

    def on_mount(self) -> None:
        # `is_mounted` is still False inside on_mount, so track composition ourselves: a
        # sample given before mount is drawn now.
        self._composed = True
        self.set_class(not self.compact, "-full")
        if self._max_rows is not None:
            self.query_one("#gpu-rows", VerticalScroll).styles.max_height = self._max_rows
        if self.sample is not None:
            self.update_sample(self.sample)

    # -- summary line ----------------------------------------------------------------------

    def summary(self) -> Content:
        s = self.sample
        h = self.header
        parts: list[str] = []
        gpus = s.gpus if s else []
        if gpus:
            names = {fmt.short_name(g.name) for g in gpus}
            label = names.pop() if len(names) == 1 else "mixed"
            parts.append(f"{len(gpus)} {'x' if self.ascii_only else '×'} {label}")  # noqa: RUF001
            power = [g.power_w for g in gpus if g.power_w is not None]
            limit = [g.power_limit_w for g in gpus if g.power_limit_w is not None]
            if power:
                cap = f"/{sum(limit) / 1000:.1f}" if limit else ""
                parts.append(f"Σ {sum(power) / 1000:.2f}{cap} kW")
            used = [g.mem_used_mib for g in gpus if g.mem_used_mib is not None]
            total = [g.mem_total_mib for g in gpus if g.mem_total_mib is not None]
            if used and total:
                parts.append(f"mem {sum(used) / 1024:.0f}/{sum(total) / 1024:.0f}G")
            throttled = [g.index for g in gpus if g.throttled]
            if throttled:
                parts.append(f"throttled: {len(throttled)}")
        elif h is not None:
            parts.append(f"{len(h.gpus)} GPUs")
        if h is not None:
            parts.append(h.backend)
        parts.append(f"history: {self.history_metric} [m]")
        if s is not None and s.cost_ms is not None:
            parts.append(f"{s.cost_ms:.1f} ms/sample")
        line = Content((" | " if self.ascii_only else " · ").join(parts) if parts else "GPUs")
        if self.failure is None:
            return line
        said = Content.styled(f"GPU agent failed: {sanitize(self.failure)} (retrying)",
                              "$error")
        return said if s is None and h is None else Content.assemble(said, " · ", line)

    def _refresh_summary(self) -> None:
        if self._composed:
            self.query_one("#gpu-summary", Static).update(self.summary())
            self.query_one(GpuColumns).refresh()

    # -- reactives and actions -------------------------------------------------------------

    def watch_compact(self, compact: bool) -> None:
        self.set_class(not compact, "-full")
        for row in self.rows.values():
            row.set_class(not compact, "-full")
            row.fit_height()
            row.refresh()

    def watch_ascii_only(self) -> None:
        self._refresh_rows()
        self._refresh_summary()

    def watch_history_metric(self) -> None:
        self._refresh_rows()
        self._refresh_summary()

    def _refresh_rows(self) -> None:
        for row in self.rows.values():
            row.refresh()

    def action_cycle_metric(self) -> None:
        i = HISTORY_METRICS.index(self.history_metric)
        self.history_metric = HISTORY_METRICS[(i + 1) % len(HISTORY_METRICS)]

    def action_toggle_compact(self) -> None:
        self.compact = not self.compact

    def action_topology(self) -> None:
        self.post_message(self.TopologyRequested())

    @staticmethod
    def help_text(thresholds: Mapping[str, tuple[float, float]] | None = None) -> str:
        lines = ["Loading-intensity colours (low / mid / high):"]
        for kind, (low, high) in (thresholds or THRESHOLDS).items():
            unit = "°C" if kind == "temp" else "%"
            lines.append(f"  {kind:<6} < {low:g}{unit} / < {high:g}{unit} / above")
        lines.append("m: history metric (util, power, memory, PCIe) · v: compact/full "
                     "(full rows list processes) · t: topology · K: signal one of your GPU "
                     "processes")
        return "\n".join(lines)
