"""The environment differences that change numbers: driver, CUDA, package versions, power limit, CPU,
and the llmbench code that measured (a comparison of two machines is only one of machines when the
same code ran on both)."""

from __future__ import annotations

from typing import Any

from llmbench.caseinfo import CaseInfo
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
NOT_RECORDED = "(not recorded)"


def _get(env: dict[str, Any], path: str) -> Any:
    cur: Any = env
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


COMMIT_KEY = "llmbench commit"


def llmbench_commits(rs: ResultSet) -> str | None:
    """The llmbench commits that measured a set's cases (a resumed set can span several), short,
    in order of first use; None when nothing recorded one (published figures)."""
    commits: list[str | None] = [CaseInfo.of(c.info).llmbench_commit for c in rs.cases]
    commits.append(rs.llmbench.get("git_commit"))
    short = list(dict.fromkeys(str(c)[:7] for c in commits if c))
    return ", ".join(short) or None


MODIFIED_KEY = "llmbench tree modified"


def tree_modified(rs: ResultSet) -> str | None:
    """'yes' when any case ran from a tree whose tracked files differed from its commit, 'no' when
    every case says it did not, 'unknown' when some did not know (a pinned LLMBENCH_GIT_COMMIT); None
    when no case recorded it (sets older than this record, published figures)."""
    infos = [CaseInfo.of(c.info) for c in rs.cases]
    got = [i.llmbench_tree_modified for i in infos if "llmbench_tree_modified" in i.model_fields_set]
    if not got:
        return None
    if any(v is True for v in got):
        return "yes"
    return "no" if all(v is False for v in got) else "unknown"


def env_differences(sets: list[ResultSet]) -> list[tuple[str, list[str]]]:
    """(key, value per set) for each key whose recorded values differ; the GPU name always. A key
    recorded by some sets only is shown too, as '(not recorded)' on the others: a set that does not
    say which driver or llmbench commit it ran is a difference a reader must see, not noise."""
    packages: list[str] = []
    for rs in sets:
        packages += [p for p in (rs.env.get("packages") or {}) if p not in packages]
    rows: list[tuple[str, list[Any]]] = [
        (key, [_get(rs.env, key) for rs in sets])
        for key in (*ENV_KEYS, *(f"packages.{p}" for p in sorted(packages)))
    ]
    rows.append((COMMIT_KEY, [llmbench_commits(rs) for rs in sets]))
    rows.append((MODIFIED_KEY, [tree_modified(rs) for rs in sets]))
    out = []
    for key, values in rows:
        present = [v for v in values if v is not None]
        differs = len({repr(v) for v in values}) > 1 and len(present) >= 1
        if key == "gpu.name" or differs:
            out.append((key, [NOT_RECORDED if v is None else str(v) for v in values]))
    return out
