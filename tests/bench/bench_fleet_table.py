"""The fleet table's cost per refresh: widgets.fleet_table.FleetTable (a line-API widget that
re-renders the rows whose cells changed) against a Textual DataTable fed the same cells and
patched cell by cell (what the fleet screen used before; a DataTable drops its whole render
cache on any cell update).

64 hosts (the fleet screen's six recorded hosts, repeated under other names), 120x40, each
refresh changes the gen tok/s of 8 hosts, as a fleet under load does every second. CPU time of
this process per refresh, the screen rendered each time (headless).

    .venv/bin/python tests/bench/bench_fleet_table.py [--hosts 64] [--refreshes 60]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")

from rich.text import Text
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from console.fleet.models import HostSummary
from widgets.fleet_rows import COLUMNS, cells
from widgets.fleet_table import FleetTable


class DataTablePeer(DataTable[Text]):
    """The same rows in a DataTable, only the changed cells updated."""

    def __init__(self) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True)
        self._cells: dict[str, tuple[Text, ...]] = {}
        self._order: list[str] = []

    def show(self, summaries: list[HostSummary]) -> None:
        fresh = {s.host: cells(s) for s in summaries}
        if not self.columns:
            for key, label in COLUMNS:
                self.add_column(Text(label), key=key)
            for host, row in fresh.items():
                self.add_row(*row, key=host)
            self._order = list(fresh)
        else:
            for index, host in enumerate(self._order):
                for column, cell in enumerate(fresh[host]):
                    if cell.plain != self._cells[host][column].plain:
                        self.update_cell_at(Coordinate(index, column), cell)
        self._cells = fresh


class TableApp(App[None]):
    def __init__(self, table: Any) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


async def summaries(hosts: int) -> list[HostSummary]:
    from tests.support.fleet_app import fleet_app

    app = fleet_app()
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(4):
            await pilot.pause(0.1)
        seeds = list(app.screen.summaries)
    return [seeds[i % len(seeds)].model_copy(update={"host": f"gpu-{i:03d}"})
            for i in range(hosts)]


def changed(rows: list[HostSummary], step: int) -> list[HostSummary]:
    """8 hosts' gen tok/s move (those with a load line)."""
    out = list(rows)
    for offset in range(8):
        index = (step * 8 + offset) % len(rows)
        load = rows[index].load
        if load is not None:
            new = load.model_copy(update={"gen_tok_s": 1000.0 + step * 37 + offset})
            out[index] = rows[index].model_copy(update={"load": new})
    return out


async def measure(table: Any, rows: list[HostSummary], refreshes: int) -> float:
    app = TableApp(table)
    async with app.run_test(size=(120, 40)) as pilot:
        table.show(rows)
        await pilot.pause()
        cpu = time.process_time()
        for step in range(refreshes):
            rows = changed(rows, step)
            table.show(rows)
            await pilot.pause()  # the compositor renders what changed
        return (time.process_time() - cpu) / refreshes


async def main(hosts: int, refreshes: int) -> None:
    rows = await summaries(hosts)
    ours = await measure(FleetTable(), rows, refreshes)
    peer = await measure(DataTablePeer(), rows, refreshes)
    print(f"{hosts} hosts, 8 changing per refresh, 120x40, {refreshes} refreshes")
    print(f"FleetTable (line API): {1000 * ours:.1f} ms CPU per refresh")
    print(f"DataTable peer:        {1000 * peer:.1f} ms CPU per refresh")
    print(f"ratio: FleetTable takes {ours / peer:.2f}x the DataTable's CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--refreshes", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(main(args.hosts, args.refreshes))
