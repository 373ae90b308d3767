"""Fault probe: bad inputs and misbehaving cases through the real CLI, each in a fresh folder; records
each input's exit code, its last output line and whether a traceback reached the user.

    python benchmarks/fault_probe.py CHECKOUT OUT.json [NAME-SUBSTRING ...]

CHECKOUT is the llmbench tree to probe (put first on PYTHONPATH); a row is OK when the exit code is
one the input should give and no traceback was printed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(sys.argv[1]).resolve()
OUT = Path(sys.argv[2])
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}", "COLUMNS": "100", "NO_COLOR": "1"}
PLUG = {"LLMBENCH_PLUGINS": "tests.plugins.fault_scenarios"}

SUITE = textwrap.dedent("""
    name = "probe"
    [[case]]
    scenario = "fault"
    matrix.kind = ["ok"]
""")


def cli(*args: str) -> list[str]:
    return [PY, "-m", "llmbench", *args]


def ok_set(d: Path) -> Path:
    (d / "s.toml").write_text(SUITE)
    subprocess.run(cli("run", str(d / "s.toml"), "--out", str(d / "r"), "--cpu"), env={**ENV, **PLUG}, cwd=d,
                   capture_output=True, timeout=120)
    return next((d / "r").rglob("probe-*.json"))


def mutate(path: Path, fn) -> Path:
    data = json.loads(path.read_text())
    fn(data)
    new = path.with_name("probe-20990101T000000Z.json")
    new.write_text(json.dumps(data))
    return new


CASES = []


def case(name: str, expect: tuple[int, ...] = (2,)):
    def deco(fn):
        CASES.append((name, expect, fn))
        return fn
    return deco


@case("suite TOML syntax error")
def _(d):
    (d / "bad.toml").write_text("name = 'x'\n[[case]\nscenario='fault'\n")
    return cli("run", str(d / "bad.toml"), "--cpu", "--out", str(d / "r")), PLUG


@case("suite with no cases")
def _(d):
    (d / "empty.toml").write_text('name = "empty"\n')
    return cli("run", str(d / "empty.toml"), "--cpu", "--out", str(d / "r")), PLUG


@case("param NaN in TOML (kind = nan)")
def _(d):
    (d / "n.toml").write_text('name = "n"\n[[case]]\nscenario = "fault"\nseconds = nan\n')
    return cli("run", str(d / "n.toml"), "--cpu", "--out", str(d / "r")), PLUG


@case("param of the wrong type (seconds = 'abc')")
def _(d):
    (d / "t.toml").write_text('name = "t"\n[[case]]\nscenario = "fault"\nseconds = "abc"\n')
    return cli("run", str(d / "t.toml"), "--cpu", "--out", str(d / "r")), PLUG


@case("suite file with a UTF-8 BOM", (0,))
def _(d):
    (d / "bom.toml").write_bytes(b"\xef\xbb\xbf" + SUITE.encode())
    return cli("run", str(d / "bom.toml"), "--cpu", "--out", str(d / "r")), PLUG


@case("filter that matches no case")
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "-k", "kind=nothing", "--out", str(d / "r")), PLUG


@case("a filter without '=' (a substring of labels, by design)", (0,))
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "-k", "kind", "--out", str(d / "r")), PLUG


@case("--timeout 0")
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "--timeout", "0", "--out", str(d / "r")), PLUG


@case("--timeout -5")
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "--timeout", "-5", "--out", str(d / "r")), PLUG


@case("--repeat 0")
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "--repeat", "0", "--out", str(d / "r")), PLUG


@case("--out /dev/null (a device, not a folder)")
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "--out", "/dev/null"), PLUG


@case("--out is an empty string (the current folder, as --out .)", (0,))
def _(d):
    (d / "s.toml").write_text(SUITE)
    return cli("run", str(d / "s.toml"), "--cpu", "--out", ""), PLUG


@case("LLMBENCH_PLUGINS names a module that does not exist")
def _(d):
    return cli("run", "quickstart", "--cpu", "--dry-run", "--out", str(d / "r")), {"LLMBENCH_PLUGINS": "no.such.mod"}


@case("LLMBENCH_SUITES points at a file")
def _(d):
    (d / "f").write_text("x")
    return cli("run", "quickstart", "--cpu", "--dry-run", "--out", str(d / "r")), {"LLMBENCH_SUITES": str(d / "f")}


@case("show of an empty file")
def _(d):
    (d / "e.json").write_text("")
    return cli("show", str(d / "e.json")), {}


@case("show of a folder with no sets")
def _(d):
    (d / "x").mkdir()
    return cli("show", str(d / "x")), {}


@case("show of a .tar.gz that is not a bundle")
def _(d):
    import tarfile
    (d / "a.txt").write_text("hi")
    with tarfile.open(d / "b.tar.gz", "w:gz") as t:
        t.add(d / "a.txt", arcname="a.txt")
    return cli("show", str(d / "b.tar.gz")), {}


@case("show of a truncated gzip")
def _(d):
    (d / "t.tar.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    return cli("show", str(d / "t.tar.gz")), {}


@case("show of a set whose case status is 'bogus'")
def _(d):
    p = mutate(ok_set(d), lambda s: s["cases"][0].__setitem__("status", "bogus"))
    return cli("show", str(p)), {}


@case("show of a set whose metric value is a string")
def _(d):
    p = mutate(ok_set(d), lambda s: s["cases"][0]["metrics"]["time_ms"].__setitem__("value", "fast"))
    return cli("show", str(p)), {}


@case("show of deeply nested JSON (recursion)")
def _(d):
    (d / "deep.json").write_text("[" * 100000 + "]" * 100000)
    return cli("show", str(d / "deep.json")), {}


@case("show of JSON with trailing garbage")
def _(d):
    p = ok_set(d)
    (d / "g.json").write_text(p.read_text() + "garbage")
    return cli("show", str(d / "g.json")), {}


@case("compare the same file twice", (0, 2))
def _(d):
    p = ok_set(d)
    return cli("compare", str(p), str(p)), {}


@case("compare --fail-if-slower abc")
def _(d):
    p = ok_set(d)
    return cli("compare", str(p), str(p), "--fail-if-slower", "abc"), {}


@case("compare --fail-if-slower -5%")
def _(d):
    p = ok_set(d)
    return cli("compare", str(p), str(p), "--fail-if-slower", "-5%"), {}


@case("compare --price with a non-number")
def _(d):
    p = ok_set(d)
    return cli("compare", str(p), str(p), "--price", "cpu=abc"), {}


@case("compare of a nonexistent file")
def _(d):
    return cli("compare", str(d / "nope.json"), str(d / "nope2.json")), {}


@case("spread of one file", (0, 2))
def _(d):
    return cli("spread", str(ok_set(d))), {}


@case("report --out onto an existing folder")
def _(d):
    p = ok_set(d)
    (d / "rep").mkdir()
    return cli("report", str(p), "--out", str(d / "rep")), {}


@case("oneshot --budget -5")
def _(d):
    return cli("oneshot", "--cpu", "--budget", "-5", "--out", str(d / "o")), {}


@case("oneshot --resume of a missing bundle")
def _(d):
    return cli("oneshot", "--cpu", "--resume", str(d / "none.tar.gz"), "--out", str(d / "o")), {}


@case("serve-bench --url that is not a URL")
def _(d):
    return cli("serve-bench", "--url", "notaurl", "--model", "m", "--concurrency", "1", "--out", str(d / "r")), {}


@case("serve-bench --concurrency 0,-1")
def _(d):
    return cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--concurrency", "0,-1",
               "--out", str(d / "r")), {}


@case("serve-bench --rate abc")
def _(d):
    return cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--rate", "abc", "--out", str(d / "r")), {}


@case("project --to a GPU the table does not know")
def _(d):
    return cli("project", str(ok_set(d)), "--to", "no-such-gpu"), {}


@case("run's stdout into a closed pipe (| head -c0)", (0, 1, 2, 141))
def _(d):
    (d / "s.toml").write_text(SUITE)
    run = " ".join(cli("run", str(d / "s.toml"), "--cpu", "--out", str(d / "r")))
    return ["bash", "-c", f"{run} | head -c 0"], PLUG


@case("list of an unknown kind")
def _(d):
    return cli("list", "frobnicate"), {}


@case("a case that prints 20 MB to stdout", (0, 1))
def _(d):
    plug = d / "loud_plugin.py"
    plug.write_text(textwrap.dedent("""
        import sys
        from llmbench.scenarios.base import SCENARIOS, Scenario, ScenarioParams
        class P(ScenarioParams):
            n: int = 1
        @SCENARIOS.register("loud")
        class Loud(Scenario):
            Params = P
            description = "prints a lot"
            headline = ("time_ms",)
            def run(self, params, ctx):
                sys.stdout.write("x" * (20 << 20)); sys.stdout.flush()
                m = ctx.measure(lambda: None)
                ctx.record("time_ms", [t * 1e3 for t in m.samples_s])
    """))
    (d / "l.toml").write_text('name = "l"\n[[case]]\nscenario = "loud"\n')
    return cli("run", str(d / "l.toml"), "--cpu", "--out", str(d / "r")), {
        "LLMBENCH_PLUGINS": "loud_plugin", "PYTHONPATH": f"{ROOT}:{d}"}


@case("a case that writes invalid UTF-8 to stderr and fails", (1,))
def _(d):
    plug = d / "bytes_plugin.py"
    plug.write_text(textwrap.dedent("""
        import os
        from llmbench.scenarios.base import SCENARIOS, Scenario, ScenarioParams
        class P(ScenarioParams):
            n: int = 1
        @SCENARIOS.register("bytes")
        class B(Scenario):
            Params = P
            description = "bad bytes"
            headline = ("time_ms",)
            def run(self, params, ctx):
                os.write(2, b"\\xff\\xfe\\x00bad\\n")
                os._exit(7)
    """))
    (d / "b.toml").write_text('name = "b"\n[[case]]\nscenario = "bytes"\n')
    return cli("run", str(d / "b.toml"), "--cpu", "--out", str(d / "r")), {
        "LLMBENCH_PLUGINS": "bytes_plugin", "PYTHONPATH": f"{ROOT}:{d}"}


def main() -> None:
    rows = []
    only = sys.argv[3:] or None
    for name, expect, fn in CASES:
        if only and not any(o in name for o in only):
            continue
        with tempfile.TemporaryDirectory() as td:
            d = Path(td)
            try:
                cmd, extra = fn(d)
            except Exception as e:  # the probe's own set-up failed
                rows.append({"input": name, "setup_error": repr(e)[:300]})
                continue
            t0 = time.time()
            try:
                p = subprocess.run(cmd, env={**ENV, **extra}, cwd=d, capture_output=True, timeout=180)
                rc, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
            except subprocess.TimeoutExpired:
                rc, out, err = "timeout", "", ""
            text = (out + err).strip()
            lines = [x for x in text.splitlines() if x.strip()]
            tb = "Traceback (most recent call last)" in text
            verdict = "OK" if (rc in expect and not tb) else "FINDING"
            rows.append({"input": name, "rc": rc, "expect": list(expect), "traceback": tb, "lines": len(lines),
                         "seconds": round(time.time() - t0, 1), "verdict": verdict,
                         "tail": (lines[-1][:240] if lines else "") if len(text) < 50_000 else f"<{len(text)} chars>"})
        row = rows[-1]
        print(f"{row.get('verdict', 'SETUP')}: {name}: rc={row.get('rc')} {row.get('tail', '')[:150]}", flush=True)
    OUT.write_text(json.dumps(rows, indent=1))


main()
