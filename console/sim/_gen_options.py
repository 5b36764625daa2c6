"""Regenerate console/sglang/data/options-0.5.23.json from Appendix A of the SGLang reference.

Run: python -m console.sim._gen_options docs/sglang.md
The JSON keeps argparse's order so `--help` and prefix matching behave like the real parser.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

OUT = Path(__file__).parents[1] / "sglang" / "data" / "options-0.5.23.json"


def parse_appendix_a(text: str) -> list[dict[str, object]]:
    start = text.index("## Appendix A")
    end = text.index("## Appendix B")
    rows: list[dict[str, object]] = []
    for line in text[start:end].splitlines():
        if not line.startswith("| `--"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = [n.strip() for n in cells[0].strip("`").split(",")]
        default_src = cells[2].strip("`")
        try:
            default = ast.literal_eval(default_src)
        except (ValueError, SyntaxError):
            default = default_src
        choices_src = cells[3].strip()
        choices = choices_src[1:-1].split(",") if choices_src.startswith("{") else None
        rows.append(
            {
                "names": names,
                "type": cells[1],
                "default": default,
                "choices": choices,
                "defined_at": cells[4],
            }
        )
    return rows


def main() -> None:
    text = Path(sys.argv[1]).read_text()
    rows = parse_appendix_a(text)
    # The docs/sglang.md §1.3 order for the sampling set, so help output is stable.
    for row in rows:
        names = row["names"]
        if isinstance(names, list) and names[0] == "--sampling-backend":
            row["choices"] = ["flashinfer", "pytorch", "ascend", "intel_xpu"]
    OUT.write_text(json.dumps(rows, indent=0) + "\n")
    print(f"{len(rows)} options -> {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
