"""The proposed ladder: SGLang's sizes and padding, the eager penalty measured on the log (or
said to be unmeasurable, never invented), the budget, the host version's flag names."""

from __future__ import annotations

import subprocess
from pathlib import Path

from console.logs.ladder import LadderReader
from console.logs.ladder_plan import eager_penalty, plan
from console.logs.ladder_text import ladder_lines, why_line
from console.sglang.graph_ladder import default_decode_ladder, padded_size

REAL = Path(__file__).parent / "data" / "logs" / "real"
EAGER_ABOVE_24 = REAL / "hwaminjung-qwen3-4b-v0.5.18-eager-above-24-kv-retract.log"
ALL_EAGER = REAL / "hwaminjung-qwen3-4b-v0.5.18-gated-admission-queue-59-eager.log"
OLD_WORDING = REAL / "ascend-qwen3-235b-dp4-eagle3-graph144-kv-admission.log"


def _reader(path: Path) -> LadderReader:
    reader = LadderReader()
    reader.feed_text(path.read_text(encoding="utf-8"))
    return reader


def test_a_batch_of_33_runs_the_40_graph_and_above_the_ceiling_none() -> None:
    ladder = default_decode_ladder(64)
    assert ladder[:8] == [1, 2, 4, 8, 12, 16, 24, 32]
    assert padded_size(33, ladder) == 40
    assert padded_size(64, ladder) == 64
    assert padded_size(65, ladder) is None
    assert default_decode_ladder(30, speculative=True)[-4:] == [24, 26, 28, 30]
    assert default_decode_ladder(30, speculative=True)[:9] == [1, 2, 3, 4, 5, 6, 7, 8, 10]


def _eager_above(path: Path, ceiling: int) -> int:
    """`cuda graph: False` Decode lines above the ceiling, counted with awk (not Plateau)."""
    out = subprocess.run(
        ["awk", "/Decode batch/ && /cuda graph: False/ { match($0, /#running-req: [0-9]+/); "
         f"b = substr($0, RSTART + 14, RLENGTH - 14) + 0; if (b > {ceiling}) n++ }} "
         "END { print n + 0 }", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_proposal_covers_the_eager_traffic_in_the_hosts_flags() -> None:
    ladder = plan(_reader(EAGER_ABOVE_24))
    proposal = ladder.proposal
    assert proposal is not None
    assert proposal.sizes[:7] == [1, 2, 4, 8, 12, 16, 24]  # the current ladder is kept
    assert proposal.sizes[-1] == 68 == ladder.max_batch
    assert proposal.added == [32, 40, 48, 56, 64, 68]
    assert proposal.flags[0].startswith("--cuda-graph-bs-decode 1 2 4 8 12 16 24 32")
    assert proposal.flags[1] == "--cuda-graph-max-bs-decode 68"
    assert proposal.coverage == 1.0
    assert proposal.moved_lines == _eager_above(EAGER_ABOVE_24, 24) == 38
    # cost: estimated memory within the stated budget, the KV tokens it takes
    assert proposal.memory_gb is not None and proposal.memory_budget_gb is not None
    assert proposal.memory_gb <= proposal.memory_budget_gb
    assert "2% of the 12.02 GB KV pool" in proposal.budget_rule
    assert proposal.kv_tokens_cost is not None and proposal.kv_tokens_cost > 0
    assert proposal.capture_s is not None and proposal.capture_s > 0.91


def test_penalty_is_measured_on_the_log_either_side_of_the_ceiling() -> None:
    reader = _reader(EAGER_ABOVE_24)
    penalty = eager_penalty(reader.samples(), 24)
    assert penalty.measured and penalty.ratio is not None
    assert penalty.how.startswith("either side of the ceiling")
    assert penalty.graph_batches is not None and penalty.graph_batches[1] <= 24
    assert penalty.eager_batches is not None and penalty.eager_batches[0] > 24
    proposal = plan(reader).proposal
    assert proposal is not None and proposal.predicted_step_gain is not None
    assert abs(proposal.predicted_step_gain - (penalty.ratio - 1)) < 1e-9


def test_no_gain_is_invented_when_the_penalty_is_not_measurable() -> None:
    ladder = plan(_reader(ALL_EAGER))  # every Decode line is eager: no graph line to compare
    assert ladder.penalty is not None and not ladder.penalty.measured
    assert ladder.proposal is not None
    assert ladder.proposal.predicted_step_gain is None
    assert ladder.proposal.predicted_decode_gain is None
    assert any("no gain predicted" in note for note in ladder.proposal.notes)
    assert not any("faster" in line for line in ladder_lines(ladder))


def test_a_budget_lowers_the_ceiling_and_says_so() -> None:
    ladder = plan(_reader(EAGER_ABOVE_24), budget_gb=0.2)
    proposal = ladder.proposal
    assert proposal is not None
    assert proposal.memory_gb is not None and proposal.memory_gb <= 0.2
    assert proposal.sizes[-1] < 68
    assert proposal.coverage < 1.0
    assert any("budget caps the ceiling" in note for note in proposal.notes)


def test_old_capture_wording_gets_the_old_flags() -> None:
    ladder = plan(_reader(OLD_WORDING))
    assert ladder.capture_wording == "old"
    assert ladder.proposal is not None
    assert ladder.proposal.flags[0].startswith("--cuda-graph-bs 144 ")
    assert ladder.proposal.flags[1].startswith("--cuda-graph-max-bs ")


def test_the_why_line_fits_80_columns() -> None:
    for path in (EAGER_ABOVE_24, ALL_EAGER, OLD_WORDING):
        line = why_line(plan(_reader(path)))
        assert len(line) <= 78
        assert line.startswith("ladder ")
        assert "|" in line  # the ceiling inside the traffic's range


def _per_line(path: Path) -> LadderReader:
    reader = LadderReader()
    reader.feed_lines(path.read_text(encoding="utf-8").splitlines())
    return reader


def test_the_rows_path_reads_what_the_per_line_path_reads() -> None:
    """feed_text (logscan's rows, one regex call per chunk) against every line parsed on its
    own: the same ladder on every real log and on a two-launch log (the last launch's)."""
    logs = [*sorted(REAL.glob("*.log")), REAL.parent / "sglang_two_launches.log"]
    for path in logs:
        fast = plan(_reader(path)).model_dump()
        slow = plan(_per_line(path)).model_dump()
        assert fast == slow, path.name
    two = plan(_reader(REAL.parent / "sglang_two_launches.log"))
    assert two.decode_lines > 0
