"""Concurrency sweeps: workloads, the native streaming load generator, the bench_serving driver
and parser, the sweep runner, knee detection and run comparison.

Public API (what the app wires):
- `console.bench.sweep.run_sweep(spec, base_url, *, engine, store, meta, on_event, log_tail,
  cancel_event) -> SweepFinished` against a base URL (console.jobs.sweep picks it: direct,
  or a Transport's port forward).
- Engines: `console.bench.engines.NativeEngine`, `console.bench.bench_serving.BenchServingEngine`.
- Events (`console.bench.models`): SweepStarted, StepStarted, StepPhase, StepFinished,
  StepFailed, SweepFinished; results are StepResult with StepMetrics.
- `console.bench.knee.knee_of_steps(steps).sentence`, `console.bench.compare.compare_runs(a, b)`.
"""
