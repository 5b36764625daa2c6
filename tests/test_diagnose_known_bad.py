"""Known-bad flag combinations: data with sources, warned about before a start (through the
real lifecycle and simulator) and in the flags editor's validation; never a refusal."""

from __future__ import annotations

from console.config_models import ServerProfile
from console.diagnose.known_bad import check_flags, known_bad
from console.host.local import LocalTransport
from console.server.events import PhaseProgress
from console.server.validate import validate_profile
from tests.support.server_fixtures import ServerEnv

NVFP4_DEEPGEMM = {"quantization": "modelopt_fp4", "moe-runner-backend": "deep_gemm"}


def test_every_entry_names_its_source_and_the_issue_examples_match() -> None:
    combos = known_bad()
    assert {"nvfp4-deepgemm-nan", "flashinfer-cutlass-moe-sm120", "deepgemm-scale-fmt"} <= {
        c.id for c in combos}
    assert all(c.source.startswith("sgl-project/sglang ") and c.message for c in combos)
    assert [c.id for c in check_flags(NVFP4_DEEPGEMM)] == ["nvfp4-deepgemm-nan"]
    assert [c.id for c in check_flags({"--moe-runner-backend": "flashinfer_cutlass"})] == [
        "flashinfer-cutlass-moe-sm120"]
    assert check_flags({"quantization": "modelopt_fp4", "moe-runner-backend": "cutlass"}) == []


def test_flags_editor_validation_warns_with_the_source() -> None:
    profile = ServerProfile(model_path="m", flags={"quantization": "modelopt_fp4"},
                            extra_args=["--moe-runner-backend", "deep_gemm"])
    report = validate_profile(profile, None)
    assert report.ok  # a warning, not a refusal
    (warning,) = [w for w in report.warnings if w.code == "known-bad"]
    assert "NaN" in warning.message and "sgl-project/sglang PR #19948" in warning.message
    assert warning.suggestion and "cutlass" in warning.suggestion


async def test_server_start_warns_then_starts(
    server_env: ServerEnv, local_transport: LocalTransport
) -> None:
    life = server_env.lifecycle(local_transport)
    record = await life.restart("bad", server_env.profile(**NVFP4_DEEPGEMM),
                                server_env.record_event)
    assert record.pid
    notes = [e.message for e in server_env.events if isinstance(e, PhaseProgress)]
    assert any("known-bad combination" in str(n) and "PR #19948" in str(n) for n in notes), notes
