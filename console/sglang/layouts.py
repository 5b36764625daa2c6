"""How SGLang spells a parallel layout, per version, and which models take attention DP.

- Replicas: `--dp-size N --tp-size T` (N TP groups of T ranks, SGLang's DataParallelController
  in front; every release).
- Attention DP: `--attn-dp-size N` in 0.5.23 (srt/arg_groups/fields/parallel.py:81), which
  resolves the older `--enable-dp-attention --dp-size N` into it
  (srt/arg_groups/parallel_hook.py:39-61, the flag deprecated); releases without
  `--attn-dp-size` take only the older spelling.
- Which models: attention DP splits the TP group into attention groups, and only a model whose
  attention layers shard over the attention-TP group (they read `get_attention_tp_size()` /
  `attn_tp_size`) does anything with it. In 0.5.23 that is the list below (read from
  `srt/models/*.py`: the files that read it, their `EntryClass`); `models/llama.py` is not
  among them (it shards attention over the whole TP group), so a Llama takes the flag and
  runs as plain TP.
"""

from __future__ import annotations

from console.sglang.flags import takes

ATTN_DP_ARCHS: frozenset[str] = frozenset({
    "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM",
    "DeepseekV4ForCausalLM", "Qwen2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "GptOssForCausalLM", "Glm4ForCausalLM",
    "Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "Llama4ForCausalLM",
    "MiniMaxM2ForCausalLM", "KimiK25ForConditionalGeneration", "KimiLinearForCausalLM",
    "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM", "LongcatFlashForCausalLM",
    "MiMoV2ForCausalLM", "MiMoV2FlashForCausalLM", "PhiMoEForCausalLM", "ExaoneMoeForCausalLM",
    "Step3p5ForCausalLM", "NemotronHForCausalLM",
})
"""0.5.23's models whose attention reads the attention-TP group (see the module doc)."""


def attn_dp_flags(groups: int, version: str | None) -> dict[str, int | bool]:
    """The flags that run `groups` attention-DP groups on this version."""
    if takes("--attn-dp-size", version):
        return {"attn-dp-size": groups}
    return {"enable-dp-attention": True, "dp-size": groups}


def attn_dp_unsupported(arch: str | None, version: str | None) -> str | None:
    """Why attention DP cannot run this model on this version; None when it can."""
    if not takes("--attn-dp-size", version) and not takes("--enable-dp-attention", version):
        return f"SGLang {version} has neither --attn-dp-size nor --enable-dp-attention"
    if arch is None:
        return ("the model's architecture is not known (no `Load weight end. ... type=` line "
                "in the log)")
    if arch not in ATTN_DP_ARCHS:
        return (f"{arch}'s attention shards over the whole TP group in SGLang 0.5.23 (its "
                "model file never reads the attention-TP size), so attention DP would run as "
                "plain TP")
    return None


def replica_flags(tp: int, replicas: int) -> dict[str, int]:
    """`--tp-size T --dp-size N`: N replicas of T ranks behind the DP controller."""
    return {"tp-size": tp, "dp-size": replicas}
