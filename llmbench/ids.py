"""Case ids: a stable hash of a case's scenario and params, never of the machine, so the same case
measured on two GPUs (or published in a paper) joins for comparison. A light module on purpose:
result-set tools use it without importing the runner."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def case_id(scenario: str, params: dict[str, Any]) -> str:
    blob = json.dumps({"scenario": scenario, "params": params}, sort_keys=True, default=str)
    return f"{scenario}/{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"
