"""The environment differences that change numbers: driver, CUDA, package versions, power limit, CPU."""

from __future__ import annotations

from typing import Any

from llmbench.results import ResultSet

# Dotted paths into ResultSet.env, in the order shown; every package in env.packages is checked too.
ENV_KEYS: tuple[str, ...] = (
    "gpu.name",
    "gpu.count",
    "gpu.memory_gib",
    "gpu.driver",
    "gpu.power_limit_w",
    "gpu.mig_mode",
    "cuda",
    "python",
    "cpu.model",
    "cpu.cores",
)
MISSING = "—"


def _get(env: dict[str, Any], path: str) -> Any:
    cur: Any = env
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def env_differences(sets: list[ResultSet]) -> list[tuple[str, list[str]]]:
    """(key, value per set) for each key whose recorded values differ; the GPU name always.
    A key recorded by only one set (published figures record little) is left out as noise."""
    packages: list[str] = []
    for rs in sets:
        packages += [p for p in (rs.env.get("packages") or {}) if p not in packages]
    out = []
    for key in (*ENV_KEYS, *(f"packages.{p}" for p in sorted(packages))):
        values = [_get(rs.env, key) for rs in sets]
        present = [v for v in values if v is not None]
        differs = len({repr(v) for v in values}) > 1 and len(present) >= 2
        if key == "gpu.name" or differs:
            out.append((key, [MISSING if v is None else str(v) for v in values]))
    return out
