"""The result-set schema (versioned, a public interface) and reading/writing it atomically."""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench.measure.stats import DRIFT_THRESHOLD, drift, summarize
from llmbench.metrics import metric

SCHEMA_VERSION = 1
STAMP = "%Y%m%dT%H%M%SZ"  # the UTC stamp in names of result sets and bundles
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


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write via a temporary file in the same folder and rename: a reader (or a crash, or kill -9)
    sees either the old file or the new one, never half of one. A symlink is written through (its
    target gets the new content; the link stays a link)."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    os.replace(_written_temp(path, text), path)


def write_new(names: Iterable[Path], text: str | bytes) -> Path:
    """Write a new file under the first of `names` that no file has, and return it. The name is
    claimed atomically (a hard link of the finished temporary file, which fails where the name exists),
    so any number of writers — processes, GPUs, nodes on a shared folder — each get a name of their
    own and a reader never sees a half-written file."""
    names = iter(names)
    first = next(names)
    tmp = _written_temp(first, text)
    try:
        for path in (first, *names):
            try:
                os.link(tmp, path)
            except FileExistsError:
                continue
            except OSError as e:  # a file system without hard links: claim the name empty, then fill it
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                    raise
                try:
                    os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                except FileExistsError:
                    continue
                os.replace(tmp, path)
            return path
        raise FileExistsError(f"{first.parent}: no free name like {first.name}")
    finally:
        Path(tmp).unlink(missing_ok=True)


def _written_temp(path: Path, text: str | bytes) -> str:
    """A temporary file beside `path` holding `text`, flushed to disk (removed again if writing fails)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a result set is for sharing
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode() if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def stamped_names(folder: Path, prefix: str, suffix: str) -> Iterator[Path]:
    """Names for a new file, `<prefix>-<UTC><suffix>` and, where another writer took that within the
    same second, `<prefix>-<UTC>_<microseconds><suffix>`: UTC stamps sort by name, and an underscore
    sorts after the plain name's dot, so a folder listed by name is still oldest first."""
    for _ in range(10_000):
        now = datetime.now(timezone.utc)
        yield folder / f"{prefix}-{now.strftime(STAMP)}{suffix}"
        yield folder / f"{prefix}-{now.strftime(STAMP)}_{now.microsecond:06d}{suffix}"


@contextmanager
def set_lock(path: Path) -> Iterator[None]:
    """Hold the advisory lock of one result set (`.<name>.lock` beside its real file) while its copy
    on disk is read, merged and rewritten: concurrent runs (--resume with other filters) then add to
    one file instead of overwriting each other's cases."""
    real = Path(os.path.realpath(path))
    real.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(real.parent / f".{real.name}.lock", os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def save_merged(path: Path, ours: ResultSet, new_cases: list[CaseResult]) -> ResultSet:
    """Under the set's lock: read the set on disk (another run may have added cases since), upsert
    the cases this run measured (a case the other run measured too keeps that result in `history`),
    add our warnings, take our `finished_at`, and write it atomically. Returns the merged set; `ours`
    stands in where the file is gone or unreadable. Raises OSError where it cannot be written."""
    with set_lock(path):
        try:
            merged = load(path)
        except (OSError, ValueError):
            merged = ours.model_copy(deep=True)
        for case in new_cases:
            merged.upsert(case.model_copy())
        merged.warnings += [w for w in ours.warnings if w not in merged.warnings]
        merged.finished_at = ours.finished_at
        save(merged, path)
    return merged


_NUMBER_LIST = re.compile(r"\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]")


def to_json(result_set: ResultSet) -> str:
    """Indented JSON with lists of numbers (raw samples) on one line each: readable and compact."""
    text = result_set.model_dump_json(indent=1, exclude_none=False)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(result_set: ResultSet, path: Path) -> None:
    write_atomic(path, to_json(result_set))


def load(path: str | Path) -> ResultSet:
    """Read a result set; a file from a newer schema is refused with a clear message."""
    p = Path(path)
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
    """The plain name of a result set stamped `now`: OUT/<gpu-slug>/<suite>-<UTC>.json (a new set is
    written under a name claimed by `save_new`, which adds `_<microseconds>` where this one is taken)."""
    stamp = (now or datetime.now(timezone.utc)).strftime(STAMP)
    return out_dir / slug / f"{suite}-{stamp}.json"


def save_new(result_set: ResultSet, out_dir: Path, slug: str, name: str) -> Path:
    """Write a new result set under OUT/<gpu-slug>/ with a name no other writer has (`stamped_names`):
    runs started at once into one --out each get a set of their own."""
    return write_new(stamped_names(out_dir / slug, name, ".json"), to_json(result_set))


def save_aside(result_set: ResultSet, cases: list[CaseResult]) -> Path:
    """Cases that could not be written into their set, as a set of their own (the same header) in the
    system's temporary folder: often another disk, and a file `show` reads and a person can merge."""
    return write_new(stamped_names(Path(tempfile.gettempdir()), f"llmbench-unsaved-{result_set.suite}", ".json"),
                     to_json(result_set.model_copy(update={"cases": list(cases)})))


def set_order(path: Path, suite: str) -> tuple[str, int] | None:
    """Where a set file named the llmbench way for `suite` sorts among that suite's (its UTC stamp,
    then microseconds); None for a name of another form or of another suite (`fp8-linear-tiny-<UTC>`
    is not `fp8-linear`'s)."""
    m = re.fullmatch(re.escape(suite) + r"-(\d{8}T\d{6}Z)(?:_(\d{6}))?\.json", path.name)
    return (m.group(1), int(m.group(2) or -1)) if m else None


def latest_result(out_dir: Path, slug: str, suite: str) -> Path | None:
    """The newest result set of `suite` on `slug` under `out_dir`, or None."""
    named = [(order, p) for p in (out_dir / slug).glob(f"{glob.escape(suite)}-*.json")
             if (order := set_order(p, suite)) is not None]
    return max(named)[1] if named else None
