"""Secrets never written or printed (llmbench.redact), and names that become paths checked."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_compare_support import H100_ENV, gemm_case, result_set

from llmbench.bundle import write_bundle
from llmbench.results import load, save
from tests.conftest import ROOT

SECRET = "S3cr3tT0k3n"


@pytest.mark.parametrize("text", [
    f"pkg @ git+https://user:{SECRET}@git.example.com/x.git@abc",
    f"pkg @ git+https://{SECRET}@github.com/o/r.git",
    f"http://user:{SECRET}@127.0.0.1:8000/v1",
    f"ray://admin:{SECRET}@head.example:10001",
    f"https://h.example/x?token={SECRET}&b=1",
    f"https://h.example/x?a=1&access_token={SECRET}#f",
    f"RAY_AUTH_TOKEN={SECRET} ray start --head",
    f'{{"RAY_AUTH_TOKEN": "{SECRET}", "HF_TOKEN": "{SECRET}"}}',
    f"ray start --ray-auth-token {SECRET} --head",
    f"ray start --ray-auth-token={SECRET}",
])
def test_redact_hides_every_credential(text: str) -> None:
    from llmbench.redact import redact

    assert SECRET not in redact(text) and "***" in redact(text)


@pytest.mark.parametrize("text", [
    "http://127.0.0.1:8000", "git@github.com:o/r.git", "--max-tokens 128 --tokenizer gpt2", "max_tokens=5",
    "MAX_TOKENS=5", "mail me@example.com", "pkg==1.2.3",
])
def test_redact_leaves_text_without_credentials_alone(text: str) -> None:
    from llmbench.redact import redact

    assert redact(text) == text


def test_a_bundle_holds_no_token_of_the_pip_freeze_logs_or_result_sets(tmp_path: Path) -> None:
    rs = result_set(H100_ENV, [gemm_case("bf16", 700.0)])
    rs.description = f"against http://u:{SECRET}@10.0.0.1:8000"
    rs.env["ray_address"] = f"ray://u:{SECRET}@head:10001"
    rs.cases[0].reason = f"RAY_AUTH_TOKEN={SECRET}"
    freeze = f"numpy==2.0.0\nmylib @ git+https://deploy:{SECRET}@git.example.com/mylib.git@0123abc\n"
    path = write_bundle(tmp_path / "b.tar.gz", {"quickstart-1.json": rs},
                        {"env/part-1/pip-freeze.txt": freeze, "logs/oneshot.log": f"--ray-auth-token {SECRET}\n"},
                        {"parts": [{"ray": f"ray://u:{SECRET}@head:10001"}]})
    with tarfile.open(path) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]
    assert b"mylib @ git+https://***@git.example.com/mylib.git@0123abc" in members["env/part-1/pip-freeze.txt"]
    assert all(SECRET.encode() not in data for data in members.values()), [n for n, d in members.items()
                                                                           if SECRET.encode() in d]
    save(rs, tmp_path / "s.json")  # a result set's own file too
    assert SECRET not in (tmp_path / "s.json").read_text() and load(tmp_path / "s.json").cases[0].id == rs.cases[0].id


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "llmbench", *args], capture_output=True, text=True, timeout=300,
                          env=env)


@pytest.mark.slow
def test_serve_bench_stores_and_prints_no_password(tmp_path: Path) -> None:
    from llmbench.models.tokenizer import build_offline_tokenizer
    from llmbench.serving.fake_server import FakeOptions, running

    tok = build_offline_tokenizer(tmp_path / "tok", 512)
    with running(FakeOptions(model="tiny", itl_ms=1)) as url:
        cred = url.replace("http://", f"http://user:{SECRET}@")
        r = cli("serve-bench", "--url", cred, "--model", "tiny", "--tokenizer", str(tok), "--concurrency", "1",
                "--input-len", "8", "--output-len", "3", "-n", "3", "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert SECRET not in r.stdout + r.stderr and "***@127.0.0.1" in r.stdout
    path = next((tmp_path / "out").glob("*/serve-bench-*.json"))
    assert SECRET not in path.read_text()
    rs = load(path)
    assert rs.cases[0].status == "ok" and rs.cases[0].params["url"] == url.replace("http://", "http://***@")


@pytest.mark.slow
@pytest.mark.parametrize(("option", "value"), [("--name", "../x"), ("--gpu", "a/../../y")])
def test_serve_bench_names_that_become_paths_are_checked(tmp_path: Path, option: str, value: str) -> None:
    out = tmp_path / "root" / "out"
    r = cli("serve-bench", "--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "x", "--rate", "1",
            option, value, "--out", str(out))
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and "letters, digits" in lines[0], r.stderr
    assert not (tmp_path / "root").exists()  # nothing written, inside --out or beside it


def test_a_path_name_is_one_plain_component() -> None:
    from llmbench.ids import is_path_name

    assert all(map(is_path_name, ["quickstart", "h100-sxm-80gb", "a.b_c-1"]))
    assert not any(map(is_path_name, ["..", "../x", "a/b", "a\\b", ".x", "", "x" * 101, "é", None]))
