"""llmbench.serving imports without aiohttp, torch or transformers, and of llmbench only the base
modules and the result schema (the layer order itself is checked by test_layers.py)."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT

# results.py reads its statistics from measure.stats, types the info entries it checks on reading
# (caseinfo) and redacts credentials before it writes (redact): all light, none imports torch
ALLOWED = {"llmbench", "llmbench.errors", "llmbench.metrics", "llmbench.results", "llmbench.measure",
           "llmbench.measure.stats", "llmbench.caseinfo", "llmbench.redact"}

SCRIPT = """
import importlib, pkgutil, sys
for name in ("aiohttp", "torch", "transformers", "matplotlib"):
    sys.modules[name] = None  # importing it now fails
import llmbench.serving as pkg
for m in pkgutil.iter_modules(pkg.__path__):
    importlib.import_module("llmbench.serving." + m.name)
print(" ".join(sorted(n for n in sys.modules if n.startswith("llmbench") and not n.startswith("llmbench.serving"))))
"""


def test_the_serving_package_imports_only_base_modules() -> None:
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) <= ALLOWED, set(r.stdout.split()) - ALLOWED
