"""Snapshot and behaviour tests of GpuPanel and TopologyView (hosted in a small App)."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from console.gpu.models import GpuHeader, GpuSample
from tests.support.gpu_fixtures import h200_events, plateau_dark_theme, sim_series
from tests.support.snapshot import SnapCompare
from widgets.gpu_panel import GpuColumns, GpuPanel, GpuRow
from widgets.topology_view import TopologyView


class PanelApp(App[None]):
    def __init__(
        self,
        header: GpuHeader,
        samples: list[GpuSample],
        *,
        compact: bool = True,
        ascii_only: bool = False,
        metric: str = "util",
        topology: bool = False,
    ) -> None:
        super().__init__()
        self.gpu_header = header
        self.samples = samples
        self.panel = GpuPanel(compact=compact, ascii_only=ascii_only,
                              history_metric=metric)  # type: ignore[arg-type]
        self.show_topology = topology
        self.topology_requests = 0
        self.register_theme(plateau_dark_theme())
        self.theme = "plateau-dark"

    def compose(self) -> ComposeResult:
        if self.show_topology:
            yield TopologyView(id="topo")
        else:
            yield self.panel

    def on_gpu_panel_topology_requested(self) -> None:
        self.topology_requests += 1

    def on_mount(self) -> None:
        if self.show_topology:
            self.query_one(TopologyView).update_topology(self.gpu_header)
            return
        self.panel.update_header(self.gpu_header)
        for sample in self.samples:
            self.panel.update_sample(sample)


SIZES = {"80x24": (80, 24), "200x60": (200, 60)}


@pytest.mark.parametrize("gpus", [1, 8, 16])
@pytest.mark.parametrize("size", ["80x24", "200x60"])
def test_panel_compact_snapshot(snap_compare: SnapCompare, gpus: int, size: str) -> None:
    header, samples = sim_series(gpus, 40)
    assert snap_compare(PanelApp(header, samples), terminal_size=SIZES[size])


@pytest.mark.parametrize("gpus", [1, 8, 16])
@pytest.mark.parametrize("size", ["80x24", "200x60"])
def test_panel_full_snapshot(snap_compare: SnapCompare, gpus: int, size: str) -> None:
    header, samples = sim_series(gpus, 40)
    app = PanelApp(header, samples, compact=False, metric="power")
    assert snap_compare(app, terminal_size=SIZES[size])


def test_panel_ascii_snapshot(snap_compare: SnapCompare) -> None:
    header, samples = sim_series(8, 40)
    assert snap_compare(PanelApp(header, samples, ascii_only=True), terminal_size=(80, 24))


def test_panel_real_h200_snapshot(snap_compare: SnapCompare) -> None:
    """A recorded sample from a real H200 under load (power capped, GPM, PCIe traffic)."""
    header, samples = h200_events("nvml_load_gpm")
    app = PanelApp(header, samples, compact=False, metric="pcie")
    assert snap_compare(app, terminal_size=(200, 24))


@pytest.mark.parametrize("gpus", [1, 8, 16])
@pytest.mark.parametrize("size", ["80x24", "200x60"])
def test_topology_snapshot(snap_compare: SnapCompare, gpus: int, size: str) -> None:
    header, _ = sim_series(gpus, 1)
    assert snap_compare(PanelApp(header, [], topology=True), terminal_size=SIZES[size])


def test_topology_real_h200_snapshot(snap_compare: SnapCompare) -> None:
    header, _ = h200_events("nvml_idle_off")
    assert snap_compare(PanelApp(header, [], topology=True), terminal_size=(80, 24))


async def test_rows_update_in_place_and_keys_work() -> None:
    header, samples = sim_series(8, 5)
    app = PanelApp(header, samples[:1])
    async with app.run_test(size=(120, 30)) as pilot:
        panel = app.panel
        rows_before = list(app.query(GpuRow))
        assert len(rows_before) == 8
        for sample in samples[1:]:
            panel.update_sample(sample)
        await pilot.pause()
        assert list(app.query(GpuRow)) == rows_before  # same widgets: no re-mount per sample
        assert len(panel.histories[0].series["util"]) == 5
        panel.focus()
        await pilot.press("m")
        assert panel.history_metric == "power"
        await pilot.press("v")
        assert panel.compact is False
        assert rows_before[0].has_class("-full")
        # 3 lines, then its process list (a header line and one process); the idle GPU: 3.
        assert rows_before[0].size.height == 5 and rows_before[-1].size.height == 3
        await pilot.press("t")
        await pilot.pause()
        assert app.topology_requests == 1


async def test_gpu_count_change_remounts_rows() -> None:
    header, samples8 = sim_series(8, 2)
    _, samples2 = sim_series(2, 1)
    app = PanelApp(header, samples8)
    async with app.run_test(size=(100, 30)) as pilot:
        app.panel.update_sample(samples2[0])
        await pilot.pause()
        assert len(app.query(GpuRow)) == 2


async def test_na_values_render_as_na() -> None:
    sample = GpuSample.model_validate({"seq": 1, "gpus": [{"index": 0, "name": "NVIDIA X",
                                                           "util_gpu": "[N/A]"}]})
    header = GpuHeader()
    app = PanelApp(header, [sample], compact=False)
    async with app.run_test(size=(120, 10)) as pilot:
        await pilot.pause()
        text = str(app.query_one(GpuRow).render())
        assert "N/A" in text
        assert "throttle: N/A" in text


async def test_sample_given_before_mount_is_drawn() -> None:
    header, samples = sim_series(4, 3)

    class EarlyApp(App[None]):
        def compose(self) -> ComposeResult:
            panel = GpuPanel()
            panel.update_header(header)
            panel.update_sample(samples[-1])  # before the panel is mounted
            yield panel

    async with EarlyApp().run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        panel = pilot.app.query_one(GpuPanel)
        assert sorted(panel.rows) == [0, 1, 2, 3]
        assert len(pilot.app.query(GpuRow)) == 4


def test_operator_thresholds_change_load_levels() -> None:
    from widgets.gpu_render import level, thresholds_with_load

    stock = GpuPanel()
    strict = GpuPanel(load_thresholds=(20.0, 40.0))
    assert level("util", 45.0, stock.thresholds) == "mid"
    assert level("util", 45.0, strict.thresholds) == "high"
    assert level("temp", 80.0, strict.thresholds) == level("temp", 80.0, stock.thresholds)
    assert "< 20%" in GpuPanel.help_text(thresholds_with_load(20.0, 40.0))


def test_sample_keeps_typed_readings() -> None:
    _header, samples = sim_series(3, 1)
    rebuilt = GpuSample.model_validate({"type": "sample", "gpus": list(samples[0].gpus)})
    assert [g.index for g in rebuilt.gpus] == [0, 1, 2]


def h200_x2_events(name: str) -> tuple[GpuHeader, list[GpuSample]]:
    from console.gpu.collector import parse_lines
    from tests.support.gpu_fixtures import GPU_DATA

    parsed = parse_lines((GPU_DATA / "h200_x2" / f"{name}.jsonl").read_text().splitlines())
    header = parsed[0]
    assert isinstance(header, GpuHeader)
    return header, [e for e in parsed if isinstance(e, GpuSample)]


@pytest.mark.parametrize("size", [(120, 8), (80, 8)])
def test_panel_h200_x2_compact_snapshot(snap_compare: SnapCompare, size: tuple[int, int]) -> None:
    """Two real H200s under load: the header row, two GPU rows with NVLink beside PCIe."""
    header, samples = h200_x2_events("agent_load")
    assert snap_compare(PanelApp(header, samples), terminal_size=size)


def test_panel_h200_x2_full_snapshot_lists_processes(snap_compare: SnapCompare) -> None:
    header, samples = h200_x2_events("agent_load")
    app = PanelApp(header, samples, compact=False)
    assert snap_compare(app, terminal_size=(160, 16))


def test_topology_h200_x2_snapshot(snap_compare: SnapCompare) -> None:
    """The 2x2 matrix with NV18, checked with nvidia-smi; NVLink 4, all links to NVSwitch."""
    header, _ = h200_x2_events("agent_load")
    assert snap_compare(PanelApp(header, [], topology=True), terminal_size=(100, 30))


async def test_header_row_and_nvlink_column_line_up() -> None:
    header, samples = h200_x2_events("agent_load")
    app = PanelApp(header, samples)
    async with app.run_test(size=(120, 8)) as pilot:
        await pilot.pause()
        columns = app.panel.query_one("#gpu-columns", GpuColumns).render().plain
        row = app.panel.rows[0].render().plain
        assert columns.startswith(" # NAME")
        assert "NVLink rx/tx" in columns and "PCIe rx/tx" in columns
        # The NVLink header sits over the NVLink rate of the row.
        at = columns.index("NVLink rx/tx")
        assert row[at:].startswith("↓2.") and "↑2." in row[at:at + 14]
        app.panel.action_toggle_compact()
        await pilot.pause()
        assert not app.panel.query_one("#gpu-columns").display
        full = app.panel.rows[0].render().plain.splitlines()
        assert any("PID" in line and "COMMAND" in line for line in full)
        assert any("713" in line and "root" in line for line in full)
