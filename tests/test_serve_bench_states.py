"""`llmbench serve-bench` says how it ended: a sweep cut by Ctrl-C is saved as not finished and said
"interrupted" once; a machine without aiohttp is one line naming the extra to install. Real processes
against the real fake server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from llmbench.results import load
from llmbench.serving.fake_server import FakeOptions, running
from tests.conftest import EVENT_S, ROOT, wait_for


@pytest.mark.slow
def test_an_interrupted_sweep_is_saved_as_not_finished_and_said_once(tmp_path: Path) -> None:
    from llmbench.models.tokenizer import build_offline_tokenizer

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with running(FakeOptions(model="tiny", itl_ms=100)) as url:  # each point takes seconds
        proc = subprocess.Popen([sys.executable, "-m", "llmbench", "serve-bench", "--url", url, "--model", "tiny",
                                 "--tokenizer", str(tok), "--concurrency", "1,1,1", "--input-len", "8",
                                 "--output-len", "4", "-n", "5", "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # the first point is saved (the runner writes the set before its first case, then after each): the
        # second is under way
        wait_for("the first point saved", lambda: any(load(p).cases for p in out.glob("*/serve-bench-*.json"))
                 or proc.poll() is not None)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=EVENT_S)
    assert proc.returncode == 130, stdout + stderr
    said = stdout + stderr
    assert said.count("interrupted:") == 1 and "Traceback" not in said, said
    rs = load(next(out.glob("*/serve-bench-*.json")))
    assert rs.finished_at is None and 1 <= len(rs.cases) < 3 and {c.status for c in rs.cases} == {"ok"}
    assert f"{len(rs.cases)} of 3 point(s) measured" in stderr


def test_serve_bench_without_aiohttp_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    fake = tmp_path / "no-aiohttp"
    fake.mkdir()
    (fake / "aiohttp.py").write_text("raise ImportError('No module named aiohttp')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "llmbench", "serve-bench", "--url", "http://127.0.0.1:9", "--model",
                        "m", "--tokenizer", "x", "--rate", "1", "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "pip install 'llmbench[serving]'" in r.stderr
    assert not (tmp_path / "out").exists()


def test_the_all_extra_installs_the_serving_client() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "serving" in extras["all"][0].split("[")[1].rstrip("]").split(",")
