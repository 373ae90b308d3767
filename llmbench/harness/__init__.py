"""Orchestration around case processes: the runner, process isolation, the worker entry point, the
plan (which cases, how long) and doctor. It imports the measuring primitives, never the reverse."""
