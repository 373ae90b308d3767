"""Measuring primitives that run inside a case process: timers and the stop rule, statistics from raw
samples, NVML monitors, kernel profiles and the progress protocol. Nothing here knows about suites,
result files or the runner (docs/design.md, layers)."""
