"""SGLang log warnings worth an operator's eye, by the substring that identifies each, mapped to
its catalogue id (console/logs/catalogue.toml)."""

from __future__ import annotations

from console.sglang.batch import KV_POOL_FULL

WARNING_IDS = {  # substring -> catalogue id
    "Using default MoE kernel config": "moe-default-config",
    KV_POOL_FULL: "kv-pool-full-retract",
    "max_running_requests was reduced": "max-running-requests-reduced",
    "No valid tactics available for fused moe op": "flashinfer-no-tactics",
    "DeepGemm is enabled but the scale_fmt": "deepgemm-scale-fmt",
    "NaN detected": "nan-detected",
}
