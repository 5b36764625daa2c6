"""A mechanism a log plainly shows is named, its presence (lines, span, how sure) said apart
from its effect; a queue at a nearly full KV pool is the pool, not a running cap; a fix that
cannot act on the evidence is not offered. Logs are built from lines of the shapes issue 37
quotes from real servers (SGLang's Decode line, its ServerArgs dump)."""

from __future__ import annotations

from console.diagnose.from_log import text_chunks
from console.diagnose.log_diagnosis import LogDiagnosis, diagnose_log, log_diagnosis_lines


def _decode(second: int, running: int, usage: float, queue: int, rate: float,
            graph: bool = True) -> str:
    return (f"[2026-05-01 09:00:{second:02d} TP0] Decode batch, #running-req: {running}, "
            f"#token: {int(usage * 2042)}, token usage: {usage:.2f}, cuda graph: {graph}, "
            f"gen throughput (token/s): {rate:.2f}, #queue-req: {queue}, ")


def _diagnose(lines: list[str]) -> LogDiagnosis:
    return diagnose_log(text_chunks(lines), None, path="built")


def test_a_queue_at_a_nearly_full_pool_is_the_pool_not_a_running_cap() -> None:
    # Issue 37: five lines `#running-req: 6, #token: 1920, token usage: 0.94, cuda graph:
    # True, ... #queue-req: 5` were read as "a cap of 6 is inferred" (running-cap 0.625).
    # At 0.94 the pool has room for well under one more request of the running ones' size.
    lines = [_decode(i, 6, 0.94, 5, 310.0 + i) for i in range(5)]
    result = _diagnose(lines)
    assert [c.id for c in result.diagnosis.causes] == ["kv-cache-full"]
    assert "running-cap" not in [c.id for c in result.diagnosis.candidates]
    assert not any("cap of" in note for note in result.inferred)
    kv = result.diagnosis.causes[0]
    assert kv.presence is not None and (kv.presence.lines, kv.presence.of) == (5, 5)
    assert "token usage 0.94 with #queue-req 5 waiting" in kv.presence.text


def test_a_queue_with_room_in_the_pool_is_a_running_cap() -> None:
    # The same queue at 0.40 usage: the pool has room, the batch sits at one count: a cap.
    lines = [_decode(i, 6, 0.40, 5, 310.0 + i) for i in range(5)]
    result = _diagnose(lines)
    assert [c.id for c in result.diagnosis.causes][:1] == ["running-cap"]
    assert any("a cap of 6 is inferred" in note for note in result.inferred)
    assert "kv-cache-full" not in [c.id for c in result.diagnosis.causes]


def test_a_full_pool_and_eager_decode_are_both_named() -> None:
    # Issue 37's abstention: a pool at `token usage: 1.00` with `#queue-req: 384`, then 118-120
    # running with 281/136 queued at 0.97-0.98, and `cuda graph: False` at 128, 64, 32 and 16
    # running gave "no clear cause" (kv-cache-full 5%, eager-decode 4%).
    lines = [_decode(1, 120, 1.00, 384, 2900.0, False), _decode(3, 118, 0.97, 281, 2850.0, False),
             _decode(5, 120, 0.98, 136, 2870.0, False), _decode(7, 128, 0.98, 0, 3010.0, False),
             _decode(9, 64, 0.50, 0, 1800.0, False), _decode(11, 32, 0.25, 0, 1000.0, False),
             _decode(13, 16, 0.12, 0, 560.0, False)]
    result = _diagnose(lines)
    named = [c.id for c in result.diagnosis.causes]
    assert set(named) == {"kv-cache-full", "eager-decode"}, named
    text = "\n".join(log_diagnosis_lines(result))
    assert "no clear cause" not in text
    eager = next(c for c in result.diagnosis.causes if c.id == "eager-decode")
    # The 60% launch-bound share is a prior: said as one, with its range.
    assert eager.effect is not None and eager.effect.kind == "prior"
    assert eager.suggest.gain_kind == "prior"
    assert eager.suggest.gain_low_pct is not None and eager.suggest.gain_high_pct is not None


def test_a_present_mechanism_with_no_measurable_effect_is_named_with_its_ab() -> None:
    # Eager lines at a captured size (the graphs not replayed) with no graph-off fit to
    # size it: named by presence, the effect "not measurable" with the A/B that measures it.
    capture = "[2026-05-01 09:00:00 TP0] Capture cuda graph bs [16, 20, 24]"
    lines = [capture] + [_decode(i + 1, 24, 0.15, 0, 540.0 + i, graph=i % 4 == 0)
                         for i in range(8)] + [_decode(20 + i, 2, 0.01, 0, 56.0, True)
                                               for i in range(4)]
    result = _diagnose(lines)
    first = result.diagnosis.causes[0]
    assert first.id == "eager-decode"
    assert first.effect is not None and first.effect.kind == "unmeasurable"
    assert "--cuda-graph-backend-decode full" in first.effect.ab
    text = "\n".join(log_diagnosis_lines(result))
    assert "effect not measurable" in text and "to measure it: A: as run" in text


def test_healthy_lines_name_nothing() -> None:
    lines = [_decode(i, 8 + i, 0.2, 0, 400.0 + 20 * i) for i in range(8)]
    result = _diagnose(lines)
    assert result.diagnosis.causes == []


def test_no_fp8_kv_against_an_explicit_max_total_tokens() -> None:
    # Issue 37: a `--max-total-tokens` cap shown in the log's own server_args got
    # `--kv-cache-dtype fp8_e4m3` as its fix; fp8 cannot lift an explicit token cap.
    args = ("[2026-05-01 09:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
            "max_total_tokens=2042, kv_cache_dtype='auto', mem_fraction_static=0.8)")
    lines = [args] + [_decode(i + 1, 6, 0.94, 5, 310.0 + i) for i in range(5)]
    result = _diagnose(lines)
    kv = result.diagnosis.causes[0]
    assert kv.id == "kv-cache-full"
    assert kv.suggest.flags == {"max-total-tokens": None}


def test_a_queue_at_the_printed_cap_is_the_cap_even_at_high_usage() -> None:
    # The reverse discriminator (a PD decode node's shape): the startup prints
    # max_running_requests=2, every loaded line runs exactly 2 with 27-38 queued at 0.87-0.89
    # usage. SGLang admits nothing past the cap whatever the pool holds: the cap decides.
    sizing = ("[2026-05-01 09:00:00 TP0] max_total_num_tokens=179456, chunked_prefill_size=-1, "
              "max_prefill_tokens=16384, max_running_requests=2, context_len=8192, "
              "available_gpu_mem=9.10 GB")
    lines = [sizing] + [_decode(i + 1, 2, 0.87 + 0.01 * (i % 3), 27 + 2 * i, 100.0 + i)
                        for i in range(6)]
    result = _diagnose(lines)
    assert [c.id for c in result.diagnosis.causes] == ["running-cap"]
    cap = result.diagnosis.causes[0]
    assert cap.presence is not None and cap.presence.lines == 6
    assert "at max_running_requests 2" in cap.presence.text


def test_a_batch_held_below_its_cap_with_a_queue_is_the_pools_reservation() -> None:
    # The Ascend DP4 shape: 170 running below max_running_requests=189 with 19 queued for
    # minutes while usage climbs 0.54 -> 0.88: the pool's reservation for the running
    # requests' remaining tokens holds admission. A queue of 1 under the cap is arrival churn.
    sizing = ("[2026-05-01 09:00:00 TP0] max_total_num_tokens=697344, chunked_prefill_size=-1, "
              "max_prefill_tokens=16384, max_running_requests=189, context_len=8192, "
              "available_gpu_mem=9.10 GB")
    held = [sizing] + [_decode(i + 1, 170, 0.54 + 0.06 * i, 19, 1470.0 + i) for i in range(6)]
    result = _diagnose(held)
    assert [c.id for c in result.diagnosis.causes] == ["kv-cache-full"]
    kv = result.diagnosis.causes[0]
    assert kv.presence is not None and "the pool's reservation" in kv.presence.text
    churn = [sizing] + [_decode(i + 1, 170, 0.54, 1, 1470.0 + i) for i in range(6)]
    assert _diagnose(churn).diagnosis.causes == []
