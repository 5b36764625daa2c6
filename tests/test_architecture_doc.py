"""docs/architecture.md stays true to the checks it describes: every part in the layers
contract (pyproject.toml) appears in the doc's layer table, in the contract's order."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_the_layer_table_follows_the_layers_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"]
                 if c["type"] == "layers"]
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    cells = [line.split("`")[1] for line in doc.splitlines() if line.startswith("| `")]
    documented = [[p.strip() for p in cell.split("\\|")] for cell in cells]
    assert [parts[0] for parts in documented] == [layer.split("|")[0].strip()
                                                   for layer in layers]
    named = {p for parts in documented for p in parts}
    for layer in layers[:-1]:  # the foundations row names its first parts and "..."
        for part in (p.strip() for p in layer.split("|")):
            assert part in named, part
