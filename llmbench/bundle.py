"""A bundle: one `.tar.gz` that carries what a run on a rented machine produced off it (result sets, the
HTML report, logs, the environment), read back by `compare`, `report` and `oneshot --resume`.
`write_bundle` and `read_bundle` are the whole interface; the layout: docs/design.md, "Bundles and `oneshot`"."""

from __future__ import annotations

import io
import json
import tarfile
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from llmbench.redact import redact, redact_bytes
from llmbench.results import (
    MAX_SET_BYTES,
    STAMP,
    ResultSet,
    from_json,
    stamped_names,
    to_json,
    utc_now,
    write_atomic,
    write_new,
)

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
SUFFIXES = (".tar.gz", ".tgz")
LOG_TAIL_BYTES = 256 << 10  # a log keeps its last 256 KiB: the end says how a run went
LOG_READ_BYTES = LOG_TAIL_BYTES + (4 << 10)  # a log as written (its tail and the note of the cut) reads whole
MANIFEST_MAX_BYTES = 16 << 20  # far above a real manifest: a larger one is refused unread
MEMBER_MAX_BYTES = 64 << 20  # another member (report, environment, suite file) is read whole up to this


@dataclass
class Bundle:
    path: Path
    manifest: dict[str, Any]
    result_sets: list[tuple[str, ResultSet]] = field(default_factory=list)  # (member name, set)
    files: Mapping[str, bytes] = field(default_factory=dict)  # every other member but the manifest (BundleFiles)

    @property
    def stem(self) -> str:
        return bundle_stem(self.path)


def read_members(files: Mapping[str, bytes], names: Iterable[str]) -> dict[str, bytes]:
    """The members `names` of a bundle's `files`, in one pass over the archive where they are read from it
    (`BundleFiles.read_many`), not one pass each."""
    if isinstance(files, BundleFiles):
        return files.read_many(names)
    return {n: files[n] for n in names}


def is_bundle(path: Path) -> bool:
    return path.name.endswith(SUFFIXES)


def bundle_stem(path: Path) -> str:
    name = path.name
    return next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), path.stem)


def bundle_name(slug: str, now: datetime | None = None, gpus: int = 1) -> str:
    """`<gpu-slug>-<UTC>.tar.gz` (`<gpu-slug>-x<N>-<UTC>.tar.gz` for a run over N > 1 GPUs): which GPU,
    how many, and when; UTC stamps sort by name (`write_new_bundle` adds `_<microseconds>` where another
    bundle took the name within the same second)."""
    return f"{node_prefix(slug, gpus)}-{(now or datetime.now(timezone.utc)).strftime(STAMP)}.tar.gz"


def node_prefix(slug: str, gpus: int) -> str:
    """A bundle name's start: the GPU slug, and the GPU count where the run held more than one."""
    return f"{slug}-x{gpus}" if gpus > 1 else slug


def gpu_count(result_sets: Iterable[ResultSet]) -> int:
    """The most GPUs any of the sets' runs saw (their fingerprint's `gpu.count`); 1 where none says."""
    counts = [(rs.env.get("gpu") or {}).get("count") for rs in result_sets]
    return max([int(c) for c in counts if isinstance(c, int)] or [1])


def tail(data: bytes, limit: int = LOG_TAIL_BYTES) -> bytes:
    """The last `limit` bytes, saying how much was cut."""
    if len(data) <= limit:
        return data
    return cut_note(len(data) - limit) + data[-limit:]


def cut_note(cut: int) -> bytes:
    return f"[... {cut} earlier bytes cut ...]\n".encode()


def result_member(rs: ResultSet, file_name: str) -> str:
    return f"results/{rs.gpu_slug}/{PurePosixPath(file_name).name}"


def write_bundle(
    path: Path, result_sets: dict[str, ResultSet], files: dict[str, bytes | str] | None = None,
    extra_manifest: dict[str, Any] | None = None,
) -> Path:
    """Write the bundle atomically (a temporary file, then a rename: an interrupted write leaves the
    previous file or none, never half of one). `result_sets` maps each set's file name to the set;
    `files` maps member names (e.g. "logs/run.log") to contents; names under logs/ keep their tail.
    Credentials in any member (a token in a pip freeze's VCS URL, a password in a log) are redacted."""
    write_atomic(path, bundle_bytes(result_sets, files, extra_manifest))
    return path


def write_new_bundle(folder: Path, slug: str, result_sets: dict[str, ResultSet],
                     files: dict[str, bytes | str] | None = None, extra_manifest: dict[str, Any] | None = None) -> Path:
    """`write_bundle` under a new name in `folder` (`bundle_name`'s form) that no other writer has: two
    oneshots into one --out each keep their bundle. The name shows the GPU count of a multi-GPU run."""
    prefix = node_prefix(slug, gpu_count(result_sets.values()))
    return write_new(stamped_names(folder, prefix, ".tar.gz"), bundle_bytes(result_sets, files, extra_manifest))


def bundle_bytes(result_sets: dict[str, ResultSet], files: dict[str, bytes | str] | None = None,
                 extra_manifest: dict[str, Any] | None = None) -> bytes:
    """The bundle's `.tar.gz` (see `write_bundle`)."""
    members: dict[str, bytes] = {}
    listed = []
    for name, rs in result_sets.items():
        member = result_member(rs, name)
        members[member] = to_json(rs).encode()
        listed.append({"file": member, "suite": rs.suite, "gpu_slug": rs.gpu_slug, "cases": len(rs.cases),
                       "statuses": dict(Counter(c.status for c in rs.cases)), "finished_at": rs.finished_at})
    for name, content in (files or {}).items():
        safe_member(name)
        data = redact_bytes(content.encode() if isinstance(content, str) else content)
        members[name] = tail(data) if name.startswith("logs/") else data
    manifest = {"bundle_format": BUNDLE_FORMAT, "created_at": utc_now(),
                "gpu_slugs": sorted({rs.gpu_slug for rs in result_sets.values()}), "result_sets": listed,
                **(extra_manifest or {})}
    members = {MANIFEST: redact(json.dumps(manifest, indent=1)).encode(), **members}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def safe_member(name: str) -> str:
    """A member name that stays inside the bundle: a plain relative POSIX path — not absolute, no
    '..' component, no empty component ('//'), no backslash (a Windows separator that another
    reader would follow)."""
    if not PurePosixPath(name).parts or name.startswith("/") or "//" in name or "\\" in name \
            or ".." in name.split("/"):
        raise ValueError(f"bundle member name {name!r} is not a relative path inside the bundle")
    return name


def read_bundle(path: Path) -> Bundle:
    """Read a bundle's manifest and result sets (nothing is extracted to disk); its other members are read
    only when asked (`BundleFiles`): a bundle carrying a huge log costs `compare` nothing. A file that is
    not a readable bundle, or a member too large for what it names, raises ValueError naming it."""
    data: dict[str, bytes] = {}
    sizes: dict[str, int] = {}
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for m in tar:  # streamed: a member is read only where kept
                if not m.isfile():
                    continue
                safe_member(m.name)
                wanted = m.name == MANIFEST or (m.name.startswith("results/") and m.name.endswith(".json"))
                if not wanted:
                    sizes[m.name] = m.size
                    continue
                cap = MANIFEST_MAX_BYTES if m.name == MANIFEST else MAX_SET_BYTES
                if m.size > cap:
                    raise ValueError(f"{path}: member {m.name} holds {m.size >> 20} MiB, more than it can "
                                     f"({cap >> 20} MiB at most)")
                f = tar.extractfile(m)
                if f is not None:
                    data[m.name] = f.read()
    except (tarfile.TarError, OSError, EOFError) as e:
        raise ValueError(f"{path}: not a readable bundle (.tar.gz): {e}") from None
    if MANIFEST not in data:
        raise ValueError(f"{path}: not an llmbench bundle (no {MANIFEST})")
    manifest = json.loads(data.pop(MANIFEST))
    if not isinstance(manifest, dict):
        raise ValueError(f"{path}: its {MANIFEST} holds a JSON {type(manifest).__name__}, not the object a "
                         "bundle's manifest is")
    if manifest.get("bundle_format") != BUNDLE_FORMAT:
        raise ValueError(f"{path}: bundle_format {manifest.get('bundle_format')!r} is not supported "
                         f"(this llmbench reads {BUNDLE_FORMAT})")
    sets = [(name, from_json(data[name].decode("utf-8"), f"{path}:{name}")) for name in sorted(data)]
    return Bundle(path, manifest, sets, BundleFiles(path, sizes))


class BundleFiles(Mapping[str, bytes]):
    """A bundle's members other than the manifest and result sets, by name, each read from the archive the
    first time it is asked for: a log as its last LOG_READ_BYTES, any other member whole up to
    MEMBER_MAX_BYTES (past that, its tail): what a bundle holds never decides what a reader's memory holds.
    Several members at once (`read_many`) are read in one pass over the archive: a gzip tar is a stream,
    and looking each one up from its start would cost the square of the members' count."""

    def __init__(self, path: Path, sizes: dict[str, int]) -> None:
        self.path, self.sizes = path, sizes
        self._read: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self.sizes:
            raise KeyError(name)
        return self.read_many([name])[name]

    def read_many(self, names: Iterable[str]) -> dict[str, bytes]:
        """The members `names` (each one the bundle has; KeyError otherwise), those not read before read in
        one pass over the archive, in its order."""
        names = list(names)
        for name in names:
            if name not in self.sizes:
                raise KeyError(name)
        wanted = {n for n in names if n not in self._read}
        if wanted:
            self._read.update(self._members(wanted))
        return {n: self._read[n] for n in names}

    def __iter__(self) -> Iterator[str]:
        return iter(self.sizes)

    def __len__(self) -> int:
        return len(self.sizes)

    def _members(self, wanted: set[str]) -> dict[str, bytes]:
        got: dict[str, bytes] = {}
        name = min(wanted)
        try:
            with tarfile.open(self.path, mode="r:gz") as tar:
                for m in tar:  # the first member of a name, as a lookup of one would find
                    if m.name not in wanted or m.name in got:
                        continue
                    name = m.name
                    got[name] = _tail_of(tar, m, LOG_READ_BYTES if name.startswith("logs/") else MEMBER_MAX_BYTES)
                    if len(got) == len(wanted):
                        break
        except (tarfile.TarError, OSError, EOFError) as e:
            raise ValueError(f"{self.path}: member {name} is not readable: {e!r}") from None
        missing = sorted(wanted - set(got))
        if missing:
            raise ValueError(f"{self.path}: member {missing[0]} is not readable: not in the archive")
        return got


def _tail_of(tar: tarfile.TarFile, m: tarfile.TarInfo, limit: int) -> bytes:
    """A member's content, or its last `limit` bytes after a note of what was cut."""
    f = tar.extractfile(m)
    if f is None:
        return b""
    skip = max(m.size - limit, 0)
    f.seek(skip)  # forward through the stream in small reads, nothing kept
    return (cut_note(skip) if skip else b"") + f.read()
