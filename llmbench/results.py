"""The result-set schema (versioned, a public interface) and reading/writing it atomically."""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections.abc import Collection
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench.measure.stats import DRIFT_THRESHOLD, drift, summarize
from llmbench.metrics import metric
from llmbench.redact import redact

SCHEMA_VERSION = 1
Status = Literal["ok", "skipped", "oom", "failed", "timeout"]
STATUSES: tuple[str, ...] = ("ok", "skipped", "oom", "failed", "timeout")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class MetricResult(BaseModel):
    """One metric of one case: the headline value (the median of the samples, unless the metric is
    a single reading), its unit, statistics from the raw samples, and the samples themselves."""

    model_config = ConfigDict(extra="allow")

    value: float
    unit: str
    stats: dict[str, Any] | None = None
    samples: list[float] | None = None
    flags: list[str] = Field(default_factory=list)

    @classmethod
    def from_samples(cls, name: str, samples: list[float], flags: list[str] | None = None) -> MetricResult:
        stats = summarize(samples)
        flags = list(flags or [])
        d = drift(samples)
        if d is not None:
            stats["drift"] = d
            if abs(d) > DRIFT_THRESHOLD and metric(name).better != "neither":
                flags.append(
                    f"drifted {d:+.0%} from the first to the last tenth of the timed window (clock or power"
                    " throttling, thermal state, caching): the median is a sustained figure, not a burst one"
                )
        return cls(
            value=float(stats["median"]),  # type: ignore[arg-type]
            unit=metric(name).unit,
            stats=stats,
            samples=[float(f"{s:.6g}") for s in samples],
            flags=flags,
        )

    @classmethod
    def single(cls, name: str, value: float, flags: list[str] | None = None) -> MetricResult:
        return cls(value=float(value), unit=metric(name).unit, flags=flags or [])


class CaseResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    scenario: str
    params: dict[str, Any]
    status: Status
    reason: str | None = None
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    timer: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)
    # What the case actually ran (engine, mode, fused layers, compile, attention, KV cache, quantization,
    # kernels): `compare` flags joined cases whose code paths differ. Empty in sets written before it.
    code_path: dict[str, Any] = Field(default_factory=dict)
    traceback: str | None = None


def history_of(case: CaseResult) -> list[dict[str, Any]]:
    """The earlier results a case replaced, oldest first (empty for a case measured once)."""
    return list((case.model_extra or {}).get("history") or [])


def compact_entry(case: CaseResult) -> dict[str, Any]:
    """One replaced result, as `history` keeps it: what it measured and with which code, no samples."""
    return {
        "status": case.status,
        "started_at": case.started_at,
        "llmbench_commit": case.info.get("llmbench_commit"),
        "llmbench_tree_modified": case.info.get("llmbench_tree_modified"),
        "metrics": {name: {"value": m.value, "unit": m.unit} for name, m in case.metrics.items()},
        **({"reason": case.reason} if case.reason else {}),
    }


class Source(BaseModel):
    model_config = ConfigDict(extra="allow")

    kind: Literal["measured", "published", "projected"] = "measured"
    citation: str | None = None
    url: str | None = None
    note: str | None = None


class ResultSet(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    suite: str
    description: str | None = None
    created_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
    llmbench: dict[str, Any] = Field(default_factory=dict)
    env: dict[str, Any] = Field(default_factory=dict)
    source: Source = Field(default_factory=Source)
    warnings: list[str] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def upsert(self, result: CaseResult) -> None:
        """Add a case, replacing an earlier result of the same id (a resumed or re-run case). The
        replaced result is kept, compact, under the new one's `history` (its status, commit and metric
        values, not its samples): a re-measure (`--force`) does not erase what was measured before."""
        old = self.case(result.id)
        if old is not None and old is not result:
            result.history = [*history_of(old), compact_entry(old)]  # type: ignore[attr-defined]
        self.cases = [c for c in self.cases if c.id != result.id] + [result]

    @property
    def gpu_slug(self) -> str:
        return str(self.env.get("gpu", {}).get("slug", "unknown"))

    @property
    def repeat_info(self) -> dict[str, Any] | None:
        """`{"group", "index", "of"}` for one pass of `llmbench run --repeat N` (an optional header field:
        sets without it are single runs), else None."""
        r = (self.model_extra or {}).get("repeat")
        return r if isinstance(r, dict) and r.get("group") else None

    @property
    def machine(self) -> str | None:
        """An anonymous id of the GPUs that measured the set (`env.gpu.id_hash`, a hash of their UUIDs):
        tells runs on the same GPUs from runs on other machines; None where not recorded."""
        got = self.env.get("gpu", {}).get("id_hash")
        return str(got) if got else None


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and rename: a reader (or a crash, or kill -9)
    sees either the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a result set is for sharing
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_NUMBER_LIST = re.compile(r"\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]")


def to_json(result_set: ResultSet) -> str:
    """Indented JSON with lists of numbers (raw samples) on one line each: readable and compact."""
    text = redact(result_set.model_dump_json(indent=1, exclude_none=False))  # no credential reaches a file
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(result_set: ResultSet, path: Path) -> None:
    write_atomic(path, to_json(result_set))


MAX_SET_BYTES = 512 << 20  # far above any real result set: a larger file is refused unread, never loaded whole
SET_NAME = re.compile(r"(?P<suite>.+?)-\d{8}T\d{6}Z(?:-[^/]+)?\.json")  # <suite>-<UTC stamp>[-<suffix>].json


def load(path: str | Path) -> ResultSet:
    """Read a result set; a file from a newer schema is refused with a clear message, and a file too large
    to be a result set (a stray download named like one) unread: reading it whole could exhaust memory."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_SET_BYTES:
        raise ValueError(f"{p}: {size >> 20} MiB is more than a result set holds ({MAX_SET_BYTES >> 20} MiB at most)")
    return from_json(p.read_text(encoding="utf-8"), str(p))


def from_json(text: str, where: str) -> ResultSet:
    """A result set from its JSON text (`where` names it in messages: a file, a bundle member)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a result set is a JSON object; this file holds a JSON {type(data).__name__}")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ValueError(f"{where}: schema_version {version!r} is not supported (this llmbench reads {SCHEMA_VERSION})")
    return ResultSet.model_validate(data)


def result_path(out_dir: Path, slug: str, suite: str, now: datetime | None = None) -> Path:
    """Where a new result set goes: OUT/<gpu-slug>/<suite>-<UTC>.json (UTC stamps sort by name)."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return out_dir / slug / f"{suite}-{stamp}.json"


def fresh_result_path(out_dir: Path, slug: str, suite: str) -> Path:
    """`result_path`, waiting for the next second when a set of that name exists already (the passes
    of `run --repeat` over skipped cases can end within one second): no run overwrites another."""
    path = result_path(out_dir, slug, suite)
    while path.exists():
        time.sleep(1.0 - time.time() % 1.0 + 0.01)
        path = result_path(out_dir, slug, suite)
    return path


def latest_result(out_dir: Path, slug: str, suite: str) -> Path | None:
    """The newest result set of `suite` on `slug` under `out_dir`, or None."""
    files = set_files(out_dir / slug, [suite])
    return files[-1] if files else None


def set_files(folder: Path, suites: Collection[str] | None = None) -> list[Path]:
    """The result sets in `folder` by name (`<suite>-<UTC stamp>[-<suffix>].json`, of `suites` where given),
    sorted: other files there (notes, a stray download) are never read as result sets."""
    found = ((p, SET_NAME.fullmatch(p.name)) for p in folder.glob("*.json"))
    return sorted(p for p, m in found if m is not None and (suites is None or m["suite"] in suites))
