"""Scenario classes, one module each, registered with `@SCENARIOS.register("name")`.

Modules here must not import torch (or any heavy package) at import time: the CLI imports them to
validate suite files and list choices, and only the case process may touch the GPU.
"""
