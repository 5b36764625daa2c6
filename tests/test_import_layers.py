"""The import contracts in pyproject.toml follow the package tree, so a new part cannot be left
out of them, and no two modules import each other even where only a type checker looks.

The layers contract must name every part on disk (a `console/X.py` module or `console/X/`
package, and `widgets`) exactly once: a part it does not name is checked by nothing (console.share
once sat outside every layer). The lists the other contracts spell out are derived here from
that order and compared: the core (every layer below the widgets) never imports Textual, and the
simulator imports no part but SGLang's dialect and the asyncio helpers. import-linter skips
`if TYPE_CHECKING:` imports (pyproject says why); the cycle check below does not, since a
type-level cycle is still two modules that each need the other to be read.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent

# What the simulator (it stands for a real SGLang host) may import of the console.
SIM_MAY_IMPORT = frozenset({"console.sim", "console.sglang", "console.aio"})


def parts_on_disk(root: Path = ROOT) -> set[str]:
    """console's top-level modules and packages, and the widgets package."""
    parts = {"widgets"}
    for child in (root / "console").iterdir():
        if child.is_dir() and (child / "__init__.py").is_file():
            parts.add(f"console.{child.name}")
        elif child.suffix == ".py" and child.stem != "__init__":
            parts.add(f"console.{child.stem}")
    return parts


def contracts(root: Path = ROOT) -> list[dict[str, Any]]:
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return found


def contract_named(prefix: str, found: Iterable[Mapping[str, Any]]) -> Mapping[str, Any]:
    (contract,) = [c for c in found if str(c["name"]).startswith(prefix)]
    return contract


def layer_parts(found: Iterable[Mapping[str, Any]]) -> list[list[str]]:
    """The layers contract's parts, top to bottom, a layer's independent parts together."""
    (layers,) = [c["layers"] for c in found if c["type"] == "layers"]
    return [[p.strip() for p in str(layer).split("|")] for layer in layers]


def coverage_problems(on_disk: set[str], layers: list[list[str]]) -> list[str]:
    named = [part for layer in layers for part in layer]
    problems = [f"{p}: on disk but in no layer (give it its place in pyproject.toml's layers "
                "contract and docs/architecture.md's table)" for p in sorted(on_disk - set(named))]
    problems += [f"{p}: in the layers but not on disk" for p in sorted(set(named) - on_disk)]
    problems += [f"{p}: in more than one layer" for p in sorted({p for p in named
                                                                  if named.count(p) > 1})]
    return problems


def below_widgets(layers: list[list[str]]) -> set[str]:
    tops = [layer[0] for layer in layers]
    return {part for layer in layers[tops.index("widgets") + 1:] for part in layer}


def test_every_part_on_disk_has_its_layer() -> None:
    assert coverage_problems(parts_on_disk(), layer_parts(contracts())) == []


def test_a_part_left_out_is_reported(tmp_path: Path) -> None:
    """The check itself fails: a package added on disk and not to the layers, a layer naming
    a part that is gone, a part named twice."""
    (tmp_path / "console" / "newpart").mkdir(parents=True)
    (tmp_path / "console" / "newpart" / "__init__.py").write_text("")
    (tmp_path / "console" / "old.py").write_text("")
    (tmp_path / "console" / "__init__.py").write_text("")
    (tmp_path / "console" / "notes").mkdir()  # no __init__.py: not a package
    on_disk = parts_on_disk(tmp_path)
    assert on_disk == {"widgets", "console.newpart", "console.old"}
    problems = coverage_problems(on_disk, [["widgets"], ["console.old", "x"], ["console.old"]])
    assert [p.split(":")[0] for p in problems] == ["console.newpart", "x", "console.old"]


def test_the_core_contract_names_every_layer_below_the_widgets() -> None:
    found = contracts()
    core = contract_named("the core never imports Textual", found)
    assert set(core["source_modules"]) == below_widgets(layer_parts(found))


def test_the_simulator_is_forbidden_every_other_part() -> None:
    found = contracts()
    sim = contract_named("the simulator imports nothing", found)
    assert set(sim["forbidden_modules"]) == parts_on_disk() - SIM_MAY_IMPORT


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the tree is deeper than the recursion limit
        work = [(start, iter(edges[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


@pytest.fixture(scope="module")
def full_graph() -> grimp.ImportGraph:
    return grimp.build_graph("console", "widgets", exclude_type_checking_imports=False,
                             cache_dir=None)


def test_no_import_cycle_even_under_type_checking(full_graph: grimp.ImportGraph) -> None:
    assert cycles(full_graph) == []


def test_the_cycle_check_sees_a_type_level_cycle(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A cycle closed only by an `if TYPE_CHECKING:` import is found, one that import-linter's
    graph (without those imports) does not hold."""
    package = tmp_path / "typecycle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "plan.py").write_text("from typecycle import screen\n")
    (package / "screen.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typecycle import plan\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("typecycle", exclude_type_checking_imports=False, cache_dir=None)
    assert cycles(graph) == [["typecycle.plan", "typecycle.screen"]]
    linted = grimp.build_graph("typecycle", exclude_type_checking_imports=True, cache_dir=None)
    assert cycles(linted) == []
