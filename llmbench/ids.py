"""Case identity: the id (a stable hash of a case's scenario and params, never of the machine, so the
same case measured on two GPUs, or published in a paper, joins for comparison) and the label people
read. A light module on purpose: result-set tools use it without importing the runner."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def case_id(scenario: str, params: dict[str, Any]) -> str:
    blob = json.dumps({"scenario": scenario, "params": params}, sort_keys=True, default=str)
    return f"{scenario}/{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"


def fmt_param(value: Any) -> str:
    """A param as people write it: shapes as 4096x4096x4096."""
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def params_text(params: dict[str, Any], keys: list[str] | None = None) -> str:
    """'precision=bf16 shape=4096x4096x4096' (unset params left out)."""
    keys = list(params) if keys is None else keys
    return " ".join(f"{k}={fmt_param(params[k])}" for k in keys if params.get(k) is not None)
