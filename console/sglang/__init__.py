"""Every SGLang fact that depends on the version: log line grammar (prefixes, batch lines,
startup lines, server_args, crashes), /metrics names, DP-rank sums; flag names per version and
known-bad combinations (flags.py, versions.py: another module's).

logs/, diagnose/, server/, bench/, sim/ and the console read SGLang through this package, so a
new SGLang version is taught in one place. Entry points:

* prefix.parse_prefix(line) -> Prefix(timestamp, ranks, message, level, shape); dp_rank,
  rank_parts, parse_timestamp, timestamp_seconds; PREFIX / RANKS / TIMESTAMP for hot loops.
* batch.parse_batch(message) -> BatchStats | None (cuda_graph None = unknown);
  is_batch_message, decode_values / scan_values (fast tuples), retracted_reqs.
* startup.parse_startup(message) -> StartupLine | None (weights, KV, capture old/new wording
  with bs, sizing, clamps, engine timings); parse_sizing; is_decode_phase.
* server_args.parse_server_args(message) -> dict (dict repr or ServerArgs(...) dataclass repr,
  no eval); server_args_form, decode_graph_ceiling, decode_graph_disabled.
* crash.exception_line(lines), crash.is_oom(text).
* launch_log.step_of(line) -> StartupStep | None (a launching server's progress), launch_log.
  diagnose(lines) -> FailureDiagnosis (why a launch failed: port in use, OOM, argparse, ...).
* metrics_names.normalise_text / normalise_name, SUMMED, MAXED, KV_GAUGES, RANK_LABELS.
* dp.NodeBatches (per-rank decode lines -> node samples), dp.imbalance.
* endpoints: SGLang's own HTTP paths (GENERATE, FLUSH_CACHE, SERVER_INFO_PATHS, ...);
  warning_lines.WARNING_IDS: warning wordings -> catalogue ids.
"""
