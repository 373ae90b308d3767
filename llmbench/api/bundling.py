"""What a oneshot bundle holds beside its result sets: the machine's environment, the suites it ran (to
resume with), the log, the HTML report and each part's summary; writing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from llmbench import __version__
from llmbench.analysis.compare import headline_metric_names
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.sections import section
from llmbench.bundle import Bundle, read_members, write_new_bundle
from llmbench.errors import UserError
from llmbench.hardware.fingerprint import llmbench_info
from llmbench.harness.doctor import Check
from llmbench.redact import HIDDEN, redact
from llmbench.results import load, save, utc_now
from llmbench.suite import Suite, load_suite


def _command_text(args: list[str], timeout_s: float = 60) -> str:
    """A command's output for the bundle's env/ folder; what went wrong, if it failed."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, check=False)
        return out.stdout + (f"\n[stderr]\n{out.stderr}" if out.returncode else "")
    except (OSError, subprocess.SubprocessError) as e:
        return f"{' '.join(args)}: {e}\n"


def environment_files(checks: list[Check], part: int) -> dict[str, bytes | str]:
    """doctor's checks, pip freeze and nvidia-smi of this machine, for env/part-N/ in the bundle."""
    files: dict[str, bytes | str] = {
        f"env/part-{part}/doctor.json": json.dumps([asdict(c) for c in checks], indent=1),
        f"env/part-{part}/pip-freeze.txt": _command_text([sys.executable, "-m", "pip", "freeze"]),
    }
    if shutil.which("nvidia-smi"):
        files[f"env/part-{part}/nvidia-smi.txt"] = _command_text(["nvidia-smi"])
    return files


def place_resumed(bundle: Bundle, out: Path) -> dict[str, Path]:
    """Write the bundle's result sets under OUT/<slug>/, where the runner continues them; by suite."""
    placed: dict[str, Path] = {}
    for member, rs in bundle.result_sets:
        path = out / rs.gpu_slug / Path(member).name
        if path.exists() and load(path).model_dump() != rs.model_dump():
            raise UserError(f"--out {str(out)!r} already holds {path.name}, which differs from the copy in "
                            f"{bundle.path.name}; give another --out")
        if not path.exists():
            save(rs, path)
        placed[rs.suite] = path
    return placed


def bundled_suites(bundle: Bundle, out: Path) -> list[Suite]:
    """The suites a bundle was run with, from the copies it carries (suites/<name>.toml): a resumed run
    has the same cases as the first part, whatever this machine's checkout holds. A copy whose
    credentials the bundle hid (a server's `--api-key ***`) cannot start that server: the suite file itself
    is asked for (its cases have the same ids)."""
    names = bundle.manifest.get("suites") or []
    odd = [n for n in names if not isinstance(n, str) or not n or n.startswith(".") or "/" in n or "\\" in n]
    if odd:  # each name becomes OUT/suites/<name>.toml: an absolute or nested name would write outside it
        raise UserError(f"--resume {bundle.path.name}: the bundle's suite name {odd[0]!r} is not a plain name")
    missing = [n for n in names if f"suites/{n}.toml" not in bundle.files]
    if not names or missing:
        raise UserError(f"--resume {bundle.path.name}: the bundle does not carry its suite file(s) "
                        f"{', '.join(missing or ['(none listed)'])}; name the suites to run after the command")
    loaded = []
    texts = read_members(bundle.files, [f"suites/{n}.toml" for n in names])
    for n in names:
        path = out / "suites" / f"{n}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(texts[f"suites/{n}.toml"])
        suite = load_suite(str(path))
        if any(_hidden_credential(c.worker_spec("cpu")) for c in suite.cases):
            path.unlink()
            raise UserError(f"--resume {bundle.path.name}: the bundle's copy of suite {n!r} has its credentials "
                            f"hidden ({HIDDEN}), so its servers cannot start from it; name the suite file after the "
                            f"command: llmbench oneshot --resume {bundle.path.name} path/to/{n}.toml")
        loaded.append(suite)
    return loaded


def _hidden_credential(spec: dict[str, Any]) -> bool:
    """Whether what a case process would run (its params and engine options) holds a credential the bundle hid."""
    return HIDDEN in json.dumps([spec["params"], spec["engine"]])


def part_summary(checks: list[Check], started: str, budget_s: float | None, interrupted: bool,
                 deferred: int) -> dict[str, Any]:
    """This session, for the manifest's `parts`: when, with what budget, how it ended, and the machine's
    stack as doctor saw it (a resumed result set keeps the first part's `env`)."""
    return {"started_at": started, "ended_at": utc_now(), "budget_s": budget_s, "interrupted": interrupted,
            "deferred": deferred, "llmbench": {**llmbench_info(), "version": __version__},
            "stack": {c.name: c.detail for c in checks if c.name in ("torch", "nvml", "gpu", "cuda", "mig")}}


def append_log(log: Path, text: str) -> None:
    """A line of the session's log, stamped and with credentials hidden."""
    with log.open("a", encoding="utf-8") as f:
        f.write(f"{utc_now()} {redact(text)}\n")


def write_oneshot_bundle(out: Path, slug: str, written: list[Path], previous: Bundle | None,
                         files: dict[str, bytes | str], log: Path, part: int, summary: dict[str, Any]) -> Path:
    """The bundle: this session's result sets (a resumed set holds the earlier parts' cases too), the
    earlier parts' logs and environment, this part's, the HTML report and the manifest."""
    members: dict[str, bytes | str] = {}
    if previous is not None:
        members.update(read_members(previous.files, [k for k in previous.files if k.startswith(("logs/", "env/"))]))
    members.update(files)
    members[f"logs/part-{part}.log"] = log.read_bytes() if log.exists() else b""
    html, why = sets_html(written, f"llmbench oneshot: {slug}")
    if html is not None:
        members["report.html"] = html
    parts = [*((previous.manifest.get("parts") or []) if previous else []), summary]
    suites = [n[len("suites/"):-len(".toml")] for n in files if n.startswith("suites/")]
    extra = {"command": "oneshot", "suites": suites, "parts": parts, **({"report_missing": why} if why else {})}
    return write_new_bundle(out, slug, {w.name: load(w) for w in written}, members, extra)


def sets_html(paths: list[Path], title: str) -> tuple[str | None, str | None]:
    """The HTML report of the result sets, one section each; None and why, where it cannot be drawn."""
    try:
        from llmbench.report.html import render_html

        headline = frozenset(headline_metric_names())  # as `llmbench report` shows by default
        sections = []
        for p in paths:
            rs = load(p)
            sections.append(section(f"{rs.suite} on {rs.env.get('gpu', {}).get('name', rs.gpu_slug)}",
                                    [SetRef(name=rs.gpu_slug, rs=rs, stem=p.stem)], 0, headline))
        return render_html(sections, title), None
    except Exception as e:  # a report problem must not cost the bundle its result sets
        return None, f"{type(e).__name__}: {e}"
