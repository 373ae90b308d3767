"""The result-set schema (versioned, a public interface) and reading/writing it atomically."""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import math
import os
import re
import stat
import tempfile
import warnings
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, get_args

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llmbench.caseinfo import info_problems
from llmbench.errors import UserError
from llmbench.measure.stats import DRIFT_THRESHOLD, drift, summarize
from llmbench.metrics import metric
from llmbench.redact import machine_paths, redact

# 1: `repeat`, `history` and the stats keys were undeclared extras (read by `_from_v1`); 2: a case's engine
# and placement only in its params, under the names they had as params (read by analysis/recorded.py)
SCHEMA_VERSION = 3
READS = (1, 2, SCHEMA_VERSION)
STAMP = "%Y%m%dT%H%M%SZ"  # the UTC stamp in names of result sets and bundles
Status = Literal["ok", "skipped", "oom", "failed", "timeout", "killed"]  # killed: a SIGKILL not the OOM killer's


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Closed(BaseModel):
    """A model of the result-set contract: a key it does not declare is refused (a newer llmbench's
    field or a typo is said, not carried along unread), and NaN and infinities are written as the
    strings "NaN", "Infinity", "-Infinity" (valid JSON) and read back as the floats they were."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings", validate_assignment=True)


UNSET: Any = Field(default=None, exclude_if=lambda v: v is None)  # an optional key, left out where absent


class Interval(Closed):
    """The median's order-statistic interval and the coverage it achieves (measure/stats.median_ci)."""

    lo: float
    hi: float
    level: float
    method: str


class Stats(Closed):
    """What measure/stats.summarize returns for a metric's samples, plus its `drift`. Sets written before
    a key existed lack it (no `ci`/`ci_method` before the order-statistic interval); a ratio of two
    measurements (linear_fp8's speedups) holds median, a bootstrap `ci95`, `n` and `n_bf16` only."""

    median: float | None = UNSET  # every key optional (a hand-made set may hold any of them); absent: not written
    mean: float | None = UNSET
    p90: float | None = UNSET
    p99: float | None = UNSET
    min: float | None = UNSET
    max: float | None = UNSET
    stdev: float | None = UNSET
    cv: float | None = UNSET
    ci95: list[float] | None = None  # [lo, hi] where the interval reaches 95%, else null (written)
    ci: Interval | None = UNSET
    ci_method: str | None = UNSET
    n: int | None = UNSET
    drift: float | None = UNSET  # measure/stats.drift: last tenth against first tenth (20 samples or more)
    n_bf16: int | None = UNSET  # a ratio against bf16: the bf16 side's sample count

    def non_finite(self) -> list[str]:
        """The summary's numbers that are NaN or infinite, by name ('cv', 'ci95')."""
        found = [k for k, v in self if isinstance(v, float) and not math.isfinite(v)]
        if self.ci95 and not all(math.isfinite(v) for v in self.ci95):
            found.append("ci95")
        if self.ci and not (math.isfinite(self.ci.lo) and math.isfinite(self.ci.hi)):
            found.append("ci")
        return found


def beyond(name: str, value: float) -> list[str]:
    """The flag of a share above its roof (`MetricDef.at_most`): its ceiling was measured, not a bound."""
    limit = metric(name).at_most
    if limit is None or not value > limit:
        return []
    return [f"{value:.3g} is above {limit:g}: the ceiling it is a share of was measured, and the work ran faster "
            "than it (no roof)"]


class MetricResult(Closed):
    """One metric of one case: the headline value (the median of the samples, unless the metric is
    a single reading), its unit, statistics from the raw samples, and the samples themselves."""

    value: float
    unit: str
    stats: Stats | None = None
    samples: list[float] | None = None
    flags: list[str] = Field(default_factory=list)
    # the version of the metric's definition it was measured by (metrics.MetricDef.version); absent: a
    # value written before llmbench recorded it, or one of no registered metric, read as 1 (`version`)
    definition: int | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def version(self) -> int:
        return self.definition or 1

    @classmethod
    def from_samples(cls, name: str, samples: list[float], flags: list[str] | None = None) -> MetricResult:
        stats = Stats.model_validate(summarize(samples))
        flags = list(flags or [])
        d = drift(samples)
        if d is not None:
            stats.drift = d
            if abs(d) > DRIFT_THRESHOLD and metric(name).better != "neither":
                flags.append(
                    f"drifted {d:+.0%} from the first to the last tenth of the timed window (clock or power"
                    " throttling, thermal state, caching): the median is a sustained figure, not a burst one"
                )
        return cls(
            value=float(stats.median),  # type: ignore[arg-type]  # summarize always gives it
            unit=metric(name).unit,
            stats=stats,
            samples=[float(f"{s:.6g}") for s in samples],
            flags=[*flags, *beyond(name, float(stats.median))],  # type: ignore[arg-type]
            definition=metric(name).version,
        )

    @classmethod
    def single(cls, name: str, value: float, flags: list[str] | None = None) -> MetricResult:
        return cls(value=float(value), unit=metric(name).unit, flags=[*(flags or []), *beyond(name, value)],
                   definition=metric(name).version)

    def non_finite(self) -> list[str]:
        """What of the metric is NaN or infinite: 'value nan', 'stats cv, ci95', '2 of 10 samples'."""
        found = [] if math.isfinite(self.value) else [f"value {self.value}"]
        stats = self.stats.non_finite() if self.stats else []
        if stats:
            found.append(f"stats {', '.join(stats)}")
        bad = sum(not math.isfinite(s) for s in self.samples or [])
        if bad:
            found.append(f"{bad} of {len(self.samples or [])} samples")
        return found


class MetricValue(Closed):
    """A metric as `history` keeps a replaced result's: the value, no samples."""

    value: float
    unit: str


class HistoryEntry(Closed):
    """One replaced result of a case (`compact_entry`): what it measured and with which code."""

    status: str
    started_at: str | None = None
    llmbench_commit: str | None = None
    llmbench_tree_modified: bool | None = None
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    reason: str | None = UNSET


NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}  # how Closed writes them


class EngineRecord(Closed):
    """The engine a case ran on: its name and its options as its options model writes them (the case's
    `[engine]` table with its defaults, an option added later left out at its default as in the params;
    a credential hidden)."""

    name: str = Field(min_length=1)
    options: dict[str, Any] = Field(default_factory=dict)


class PlacementRecord(Closed):
    """The GPUs a case held (its `placement`): on all its nodes together, over how many nodes its ranks
    ran, and in how many independent copies."""

    gpus: int = Field(1, ge=1)
    nodes: int = Field(1, ge=1)
    replicas: int = Field(1, ge=1)


class CaseResult(Closed):
    id: str
    scenario: str
    # the record the id hashes: the scenario's params and, under the names they had as params, its
    # engine's options and GPU count (suite.flat_record); `engine` and `placement` say them typed
    params: dict[str, Any]
    # absent from sets before schema 3 and from a case of no engine (gemm); analysis/recorded.py reads
    # a case's engine and GPUs from these where a set has them, else from its params
    engine: EngineRecord | None = UNSET
    placement: PlacementRecord | None = UNSET
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
    # the earlier results a re-measure replaced, oldest first (`upsert`); absent for a case measured once
    history: list[HistoryEntry] = Field(default_factory=list, exclude_if=lambda v: not v)
    # the fingerprint of the machine that ran the case, where it is not the set's (`env`): a case run by
    # `--resume` on another machine of the same GPU; absent for a case of the set's own machine
    env: dict[str, Any] = Field(default_factory=dict, exclude_if=lambda v: not v)

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_numbers(cls, v: Any) -> Any:
        """Settings are numbers (measure/timing.StopRule): `--timeout inf` reads back as the float it was."""
        if not isinstance(v, dict):
            return v
        return {k: NON_FINITE[x] if isinstance(x, str) and x in NON_FINITE else x for k, x in v.items()}


def started_unix(case: CaseResult) -> float | None:
    """When a case started, in seconds since the epoch (its `started_at`, UTC); None where not recorded."""
    return datetime.fromisoformat(case.started_at.replace("Z", "+00:00")).timestamp() if case.started_at else None


def history_of(case: CaseResult) -> list[dict[str, Any]]:
    """The earlier results a case replaced, oldest first (empty for a case measured once)."""
    return [h.model_dump() for h in case.history]


def check_finite(case: CaseResult, headline: Sequence[str]) -> CaseResult:
    """A case whose headline metric (the first of `headline`, its scenario's, that it recorded) is NaN
    or infinite measured nothing usable: it is `failed`, the reason naming the metric, its samples kept.
    Any other non-finite number (an energy, a CV, an interval) is flagged on its metric; the case stays."""
    lead = next((n for n in headline if n in case.metrics), None)
    for name, m in case.metrics.items():
        found = m.non_finite()
        if not found:
            continue
        m.flags = [*m.flags, f"not a finite number: {'; '.join(found)}"]
        if name == lead and not math.isfinite(m.value) and case.status == "ok":
            case.status = "failed"
            case.reason = f"the headline metric {name} is {m.value}, not a finite number (its samples are kept)"
    return case


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


class Source(Closed):
    kind: Literal["measured", "published", "projected"] = "measured"
    citation: str | None = None
    url: str | None = None
    note: str | None = None


class Repeat(Closed):
    """One pass of `llmbench run --repeat N`: its group (shared by the passes), its index and N."""

    group: str
    index: int
    of: int


class Correction(Closed):
    """A change made to a set after it was written (`correct`): recorded in the set, so every reader of
    it sees what was changed, not only a commit message."""

    what: str = Field(min_length=1)  # the field or cases changed, from what to what
    when: str  # UTC, as utc_now writes it
    why: str = Field(min_length=1)
    by: str | None = UNSET  # who or which session made it

    @field_validator("when")
    @classmethod
    def _utc(cls, v: str) -> str:
        try:
            datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise ValueError("not a UTC time written YYYY-MM-DDTHH:MM:SSZ") from None
        return v


class ResultSet(Closed):
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
    repeat: Repeat | None = UNSET  # absent from single runs
    corrections: list[Correction] = Field(default_factory=list, exclude_if=lambda v: not v)  # absent if none

    def case(self, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def upsert(self, result: CaseResult) -> None:
        """Add a case, replacing an earlier result of the same id (a resumed or re-run case). The
        replaced result is kept, compact, under the new one's `history` (its status, commit and metric
        values, not its samples): a re-measure (`--force`) does not erase what was measured before."""
        old = self.case(result.id)
        if old is not None and old is not result:
            result.history = [*old.history, HistoryEntry.model_validate(compact_entry(old))]
        self.cases = [c for c in self.cases if c.id != result.id] + [result]

    @property
    def gpu_slug(self) -> str:
        return str(self.env.get("gpu", {}).get("slug", "unknown"))

    @property
    def repeat_info(self) -> dict[str, Any] | None:
        """`{"group", "index", "of"}` for one pass of `llmbench run --repeat N` (an optional header field:
        sets without it are single runs), else None."""
        return self.repeat.model_dump() if self.repeat is not None and self.repeat.group else None

    def case_env(self, case: CaseResult) -> dict[str, Any]:
        """The fingerprint of the machine that ran `case`: its own where `--resume` ran it on another
        machine, else the set's."""
        return case.env or self.env

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
        for path in itertools.chain((first,), names):  # lazily: `(first, *names)` drew all 20,000 names first
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
    except BaseException:  # any end (an interrupt too) leaves no half-written file, then raises on
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


_LOCK_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def set_lock(path: Path) -> Iterator[None]:
    """Hold the advisory lock of one result set (`.<name>.lock` beside its real file) while its copy
    on disk is read, merged and rewritten: concurrent runs (--resume with other filters) then add to
    one file instead of overwriting each other's cases. The lock is never a symlink (`_open_lock`). Where
    the work under it fails, the lock file and the folders this call made for it are removed again."""
    real = Path(os.path.realpath(path))
    made = [d for d in (real.parent, *real.parent.parents) if not d.exists()]  # deepest first
    real.parent.mkdir(parents=True, exist_ok=True)
    lock = real.parent / f".{real.name}.lock"
    fd, created = _held_lock(lock)
    try:
        yield
    except BaseException:
        if created:  # safe while held: a writer that waited on this file finds it gone and takes a new one
            lock.unlink(missing_ok=True)
            for d in made:
                try:
                    d.rmdir()
                except OSError:
                    break
        raise
    finally:
        os.close(fd)  # closing releases the lock


def _held_lock(lock: Path) -> tuple[int, bool]:
    """The lock file `lock` open and locked, and whether this call created it. A lock removed while this
    call waited for it (a failed writer's, `set_lock`) is not held: it is taken again under its name."""
    while True:
        fd, created = _open_lock(lock)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = os.stat(lock, follow_symlinks=False)
        except FileNotFoundError:
            os.close(fd)
            continue
        except BaseException:
            os.close(fd)
            raise
        held = os.fstat(fd)
        if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            return fd, created
        os.close(fd)


def _open_lock(lock: Path) -> tuple[int, bool]:
    """`lock` opened, created where it is missing (and whether it was). Never through a symlink: in a
    results folder others can write to, a planted `.<set>.json.lock` link would have this process (root,
    perhaps) create or open a file wherever it points; such a link, or anything else but a file, is refused."""
    while True:
        try:
            return os.open(lock, _LOCK_FLAGS | os.O_CREAT | os.O_EXCL, 0o666), True
        except FileExistsError:
            pass
        try:
            fd = os.open(lock, _LOCK_FLAGS | os.O_NONBLOCK)  # non-blocking: a planted FIFO does not hang the open
        except FileNotFoundError:  # removed since (a failed writer's): create it
            continue
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise UserError(_not_a_lock(lock)) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise UserError(_not_a_lock(lock))
        return fd, False


def _not_a_lock(lock: Path) -> str:
    kind = "a symlink" if lock.is_symlink() else "not a plain file"
    return (f"{lock}: the result set's lock file is {kind}; llmbench opens no lock through a link (it would "
            "create or open a file where the link points): remove it, and check who can write to that folder")


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


def correct(path: Path, what: str, why: str, *, when: str | None = None, by: str | None = None) -> ResultSet:
    """Record in the set at `path`, under its lock, a change made to it after it was written (the change
    itself is the caller's: this touches no figure). `when` defaults to now. Returns the set as saved.
    A correction that fails (no set there, one that does not read) leaves no lock file or folder behind."""
    try:  # a bad entry fails before the file is read
        entry = Correction(what=what, why=why, when=when or utc_now(), by=by)
    except ValidationError as e:
        raise ValueError(f"{path}: correction {_first_problem(e)}") from None
    if not Path(path).is_file():  # nothing to correct: no lock taken, no folder made
        raise FileNotFoundError(errno.ENOENT, "no result set there", str(path))
    with set_lock(path):
        rs = load(path)
        rs.corrections = [*rs.corrections, entry]
        save(rs, path)
    return rs


_NUMBER = r'(?:-?[\d.eE+-]+|"NaN"|"-?Infinity")'  # a number, or a non-finite one as Closed writes it
_NUMBER_LIST = re.compile(rf"\[\s*({_NUMBER}(?:,\s*{_NUMBER})*)\s*\]")


def to_json(result_set: ResultSet) -> str:
    """Indented JSON with lists of numbers (raw samples) on one line each: readable and compact."""
    # no credential and no path of this machine reaches a file
    text = machine_paths(redact(result_set.model_dump_json(indent=1, exclude_none=False)))
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text) + "\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save(result_set: ResultSet, path: Path) -> None:
    write_atomic(path, to_json(result_set))


MAX_SET_BYTES = 512 << 20  # far above any real result set: a larger file is refused unread, never loaded whole
SET_NAME = re.compile(r"(?P<suite>.+?)-\d{8}T\d{6}Z(?:[-_][^/]+)?\.json")  # <suite>-<UTC stamp>[_<us>|-<suffix>].json


def load(path: str | Path) -> ResultSet:
    """Read a result set; a file from a newer schema is refused with a clear message, and a file too large
    to be a result set (a stray download named like one) unread: reading it whole could exhaust memory."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_SET_BYTES:
        raise ValueError(f"{p}: {size >> 20} MiB is more than a result set holds ({MAX_SET_BYTES >> 20} MiB at most)")
    return from_json(p.read_text(encoding="utf-8"), str(p))


class ReadWarning(UserWarning):
    """Something of a result set read that a reader can go on without (a wrong-typed info entry, an
    info_version newer than this llmbench): the CLI prints each as one line on stderr."""


def from_json(text: str, where: str) -> ResultSet:
    """A result set from its JSON text (`where` names it in messages: a file, a bundle member). A set of
    an older schema is upgraded in memory (the file is not rewritten; a save writes SCHEMA_VERSION);
    one that does not fit the schema is a ValueError naming the key and what fits there."""
    try:
        data = _parse_json(text)
    except RecursionError:  # nested deeper than the parser goes: no result set is shaped so
        raise ValueError(f"{where}: JSON nested too deep to be a result set") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: a result set is a JSON object; this file holds a JSON {type(data).__name__}")
    version = data.get("schema_version")
    if version not in READS:
        newer = " (a newer llmbench's set: upgrade llmbench to read it)" if isinstance(version, int) and \
            not isinstance(version, bool) and version > SCHEMA_VERSION else ""
        raise ValueError(f"{where}: schema_version {version!r} is not supported{newer}; this llmbench reads "
                         f"{', '.join(map(str, READS[:-1]))} and {READS[-1]}")
    if version == 1:
        data = _from_v1(data)
    data = {**data, "schema_version": SCHEMA_VERSION}  # 2 reads as it is: its cases lack the typed fields
    try:
        rs = ResultSet.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"{where}: {_first_problem(e)}") from None
    found: dict[str, list[str]] = {}  # a problem -> the cases that have it: one line each, not one per case
    for case in rs.cases:
        for problem in info_problems(case.info):
            found.setdefault(problem, []).append(case.id)
    for problem, ids in found.items():
        more = f" (and {len(ids) - 1} more cases)" if len(ids) > 1 else ""
        warnings.warn(ReadWarning(f"{where}: case {ids[0]}{more}: {problem}"), stacklevel=2)
    return rs


def _parse_json(text: str) -> Any:
    """json.loads(text), read by pydantic_core's JSON parser where it reads it: the same values (floats
    bit for bit, NaN and Infinity, key order, the last of duplicate keys) in half the time, and the
    results tree's pages and comparisons read each set several times. What it refuses (malformed JSON, a
    lone surrogate, nesting deeper than 200) json.loads reads, or refuses with its own message."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def _from_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 set as version 2 (and so 3). Version 1 wrote a NaN or infinite number as null (pydantic's
    default): a metric's null value or sample reads as NaN, a null `timeout_s` as the `--timeout inf` it
    was; `repeat` and `history` it kept as undeclared keys of the shapes version 2 declares."""
    for case in data.get("cases") or []:
        if not isinstance(case, dict):
            continue
        settings = case.get("settings")
        if isinstance(settings, dict) and "timeout_s" in settings and settings["timeout_s"] is None:
            settings["timeout_s"] = math.inf
        for m in (case.get("metrics") or {}).values():
            if isinstance(m, dict) and "value" in m and m["value"] is None:
                m["value"] = math.nan
            if isinstance(m, dict) and isinstance(m.get("samples"), list):
                m["samples"] = [math.nan if x is None else x for x in m["samples"]]
    return {**data, "schema_version": SCHEMA_VERSION}


def _first_problem(e: ValidationError) -> str:
    """The first thing of a set that does not fit the schema, on one line: where (`cases[2] (id ...)
    .metrics.tflops`), what, and for an unknown key the keys that object has."""
    err = e.errors()[0]
    loc = list(err["loc"])
    extra = err["type"] == "extra_forbidden"
    model = _model_at(loc[:-1]) if extra else None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in (loc[:-1] if extra else loc)).lstrip(".")
    if extra and model is not None:
        return (f"{where or 'the set'}: unknown key {loc[-1]!r} (not in schema_version {SCHEMA_VERSION}: a newer "
                f"llmbench's set, or hand-edited); {model.__name__} keys: {', '.join(model.model_fields)}")
    return f"{where}: {err['msg']} (got {err.get('input')!r:.80})"


def _model_at(loc: list[Any]) -> type[BaseModel] | None:
    """The model of the object at `loc` in a ResultSet (None where it is no model: a dict of free keys)."""
    model: type[BaseModel] | None = ResultSet
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:  # a key of a dict (a metric's name): the model is the dict's value type
            continue
        model = _model_in(field.annotation)
    return model


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for a in get_args(annotation) if (m := _model_in(a)) is not None), None)


def save_new(result_set: ResultSet, out_dir: Path, slug: str, name: str) -> Path:
    """Write a new result set under OUT/<gpu-slug>/ with a name no other writer has (`stamped_names`):
    runs started at once into one --out each get a set of their own."""
    return write_new(stamped_names(out_dir / slug, name, ".json"), to_json(result_set))


def save_aside(result_set: ResultSet, cases: list[CaseResult]) -> Path:
    """Cases that could not be written into their set, as a set of their own (the same header) in the
    system's temporary folder: often another disk, and a file `show` reads and a person can merge."""
    return write_new(stamped_names(Path(tempfile.gettempdir()), f"llmbench-unsaved-{result_set.suite}", ".json"),
                     to_json(result_set.model_copy(update={"cases": list(cases)})))


def latest_result(out_dir: Path, slug: str, suite: str) -> Path | None:
    """The newest result set of `suite` on `slug` under `out_dir`, or None."""
    files = set_files(out_dir / slug, [suite])
    return files[-1] if files else None


def set_files(folder: Path, suites: Collection[str] | None = None) -> list[Path]:
    """The result sets in `folder` by name (`<suite>-<UTC stamp>[_<µs>].json`, of `suites` where given),
    sorted: other files there (notes, a stray download) are never read as result sets."""
    found = ((p, SET_NAME.fullmatch(p.name)) for p in folder.glob("*.json"))
    return sorted(p for p, m in found if m is not None and (suites is None or m["suite"] in suites))
