"""What a diagnosis could not see, per cause id: the evidence each rule reads that this run's
sources did not hold. A cause named without it says so; a cause not named may be there
unseen, and the abstaining answer lists these so "no clear cause" says what was checked.

Pure: reads the RunEvidence the rules read, plus which client file (if any) came with it.
"""

from __future__ import annotations

from console.diagnose.models import RunEvidence
from console.sglang.batch import DECODE_BATCH, PREFILL_BATCH

NO_DECODE_LINES = f"no {DECODE_BATCH} lines in this log"

NO_GPU = "no GPU telemetry (power, clocks, reasons): a server log does not hold it"


def lacking(ev: RunEvidence, client: str | None, *, startup_seen: bool = True,
            inferred_ceiling: bool = False, inferred_cap: bool = False
            ) -> dict[str, list[str]]:
    """cause id -> the evidence it lacked (empty list: nothing it reads was missing).
    `client`: None, "bench_serving" or "sweep"."""
    decode = [p for s in ev.steps for p in s.decode]
    prefill = sum(len(s.prefill_rows) for s in ev.steps)
    facts = ev.startup
    out: dict[str, list[str]] = {}
    no_decode = NO_DECODE_LINES if not decode else None
    graph_known = any(p.cuda_graph is not None for p in decode)
    no_graph = ("its Decode lines print no graph field (before SGLang 0.4): graph use "
                "unknown" if decode and not graph_known else None)

    ceiling: list[str | None] = [no_decode, no_graph]
    if not facts.capture_bs:
        if inferred_ceiling:
            ceiling.append("no capture sizes in this log: the ceiling is inferred from the "
                           "batch lines (a lower bound)")
        elif facts.cuda_graph_max_bs_decode is not None:
            ceiling.append("no capture sizes in this log: the ceiling is server_args' value")
        else:
            ceiling.append("no capture sizes or server_args in this log: ceiling unknown")
    out["cuda-graph-ceiling"] = _kept(ceiling)

    eager: list[str | None] = [no_decode, no_graph]
    if not facts.decode_graph_disabled and not facts.capture_bs and \
            facts.cuda_graph_max_bs_decode is None:
        eager.append("no server_args or capture lines: whether graphs were disabled or the "
                     "batch ran above the captured sizes cannot be told")
    out["eager-decode"] = _kept(eager)

    cap: list[str | None] = [no_decode]
    if facts.max_running_requests is None:
        cap.append("no max_running_requests line in this log: the cap is unknown")
    elif inferred_cap:
        cap.append("max_running_requests not printed: the cap is inferred from #running-req")
    if client is None:
        cap.append("no client file: the offered concurrency is only seen through #queue-req")
    out["running-cap"] = _kept(cap)

    kv: list[str | None] = [no_decode]
    if decode and not any(p.token_usage is not None for p in decode):
        kv.append("its Decode lines print no token usage")
    if facts.max_total_num_tokens is None:
        kv.append("no max_total_num_tokens line: the KV pool size is unknown")
    out["kv-cache-full"] = _kept(kv)

    interference: list[str | None] = []
    if not prefill:
        interference.append(f"no {PREFILL_BATCH} lines in this log")
    if client is None:
        interference.append("no client file: no ITL p99/p50 to show decode stalls "
                            "(give --bench)")
    out["prefill-interference"] = _kept(interference)

    tp: list[str | None] = ["no GPU topology (NVLink or PCIe): a server log does not hold it"]
    if facts.tp_size is None:
        tp.append("no tp_size (server_args) in this log")
    out["tp-allreduce-pcie"] = _kept(tp)
    out["power-cap"] = [NO_GPU]
    out["thermal"] = [NO_GPU]
    out["moe-untuned"] = [] if startup_seen else [
        "no startup lines in this log: the MoE kernel warning is printed there"]

    if client is None:
        out["client-bound"] = ["no client file: the load generator's side is unknown"]
        out["too-few-prompts"] = ["no client file: prompts per concurrency unknown"]
    else:
        out["client-bound"] = (["bench_serving records no client CPU or loop lag"]
                               if client == "bench_serving" else [])
        out["too-few-prompts"] = []
    return out


def _kept(items: list[str | None]) -> list[str]:
    return [item for item in items if item]


DECODE_CAUSES = ("cuda-graph-ceiling", "eager-decode", "running-cap")


def blocking(ev: RunEvidence) -> dict[str, str]:
    """cause id -> why a cause the rules named rests on evidence this source cannot hold, so
    naming it would be a guess: the diagnosis leaves it out and says what it lacked.

    * decode causes with no Decode batch line at all (a PD prefill server disables decode
      graphs by design; a log of startup only shows no batch);
    * tp-allreduce-pcie with the topology unknown (a log never says NVLink or PCIe)."""
    out: dict[str, str] = {}
    if not any(s.decode_rows for s in ev.steps):
        for cause_id in DECODE_CAUSES:
            out[cause_id] = NO_DECODE_LINES
    if ev.topology.nvlink is None:
        out["tp-allreduce-pcie"] = "the GPU topology is unknown (a server log does not hold it)"
    return out
