"""Small built-in knowledge that `--help` cannot tell us: renames and numeric value types.

These are *hints*. They only apply to flags the host's own parser has (hints) or doesn't have
(renames), so a newer SGLang that changes a flag is judged by its own `--help`.
"""

from __future__ import annotations

from console.server.flags import ValueType

# old flag -> (new flag, since which version, note). Suggested when the old one is unknown.
RENAMES: dict[str, tuple[str, str, str]] = {
    "nsa-decode-backend": ("dsa-decode-backend", "0.5.23", "NSA was renamed DSA"),
    "nsa-prefill-backend": ("dsa-prefill-backend", "0.5.23", "NSA was renamed DSA"),
    "cuda-graph-max-bs": (
        "cuda-graph-max-bs-decode",
        "0.5.23",
        "split per phase; there is also --cuda-graph-max-bs-prefill",
    ),
    "cuda-graph-bs": (
        "cuda-graph-bs-decode",
        "0.5.23",
        "split per phase; there is also --cuda-graph-bs-prefill",
    ),
    "enable-dp-attention": ("attn-dp-size", "0.5.23", "now takes the DP attention size"),
    "disable-cuda-graph": (
        "cuda-graph-backend-decode",
        "0.5.23",
        "use --cuda-graph-backend-decode disabled (and -prefill)",
    ),
}

# Flags whose values are numbers (argparse help does not print types).
TYPE_HINTS: dict[str, ValueType] = {
    **dict.fromkeys(
        [
            "tp-size",
            "dp-size",
            "pp-size",
            "ep-size",
            "dcp-size",
            "attn-dp-size",
            "attn-cp-size",
            "moe-dense-tp-size",
            "max-running-requests",
            "max-queued-requests",
            "chunked-prefill-size",
            "max-prefill-tokens",
            "page-size",
            "context-length",
            "cuda-graph-max-bs-decode",
            "cuda-graph-max-bs-prefill",
            "cuda-graph-max-bs",
            "decode-log-interval",
            "random-seed",
            "base-gpu-id",
            "gpu-id-step",
            "nnodes",
            "node-rank",
            "nccl-port",
            "dist-timeout",
            "tokenizer-worker-num",
            "detokenizer-worker-num",
            "num-continuous-decode-steps",
            "log-requests-level",
            "port",
            "grpc-port",
            "speculative-num-steps",
            "speculative-eagle-topk",
            "speculative-num-draft-tokens",
            "stream-interval",
        ],
        "int",
    ),
    **dict.fromkeys(
        [
            "mem-fraction-static",
            "schedule-conservativeness",
            "watchdog-timeout",
            "soft-watchdog-timeout",
            "gc-warning-threshold-secs",
            "swa-full-tokens-ratio",
            "sim-startup-seconds",
            "sim-speed",
            "sim-weights-gb",
        ],
        "float",
    ),
    "max-total-tokens": "human_int",
}

# Ranges for a few numbers where a typo is easy and costly (restart of a big model).
RANGES: dict[str, tuple[float, float]] = {
    "mem-fraction-static": (0.0, 1.0),
    "tp-size": (1, 1024),
    "dp-size": (1, 1024),
    "pp-size": (1, 1024),
    "ep-size": (1, 1024),
    "port": (1, 65535),
}

# Flags the profile sets through its own fields; setting them in `flags` would duplicate them.
PROFILE_FIELD_FLAGS: dict[str, str] = {
    "model-path": "model_path",
    "model": "model_path",
    "host": "host",
    "port": "port",
    "api-key": "api_key_env",
}
