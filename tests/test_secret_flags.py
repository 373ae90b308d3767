"""Credentials given as a server's flags (`--api-key K`, `--api-key=K`, `-p K`) and as a URL's secret query
keys are hidden (llmbench.redact) everywhere llmbench writes: params and so case ids, info, reasons,
the log, a bundle's result sets, its copy of the suite and its report."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from llmbench.redact import redact, redact_value
from tests.conftest import ROOT

FLAGS = ["--api-key", "K1xq7", "--api-key=K2xq7", "--hf-token", "K3xq7", "--auth", "K4xq7", "-p", "K5xq7"]
QUERY = "access-token=Q1xq7&private_token=Q2xq7&X-Amz-Signature=Q3xq7&sig=Q4xq7&password=Q5xq7&key=Q6xq7"
SECRETS = [f"K{i}xq7" for i in range(1, 6)] + [f"Q{i}xq7" for i in range(1, 7)]


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("text", [
    " ".join(FLAGS),  # a command line as one string (a shell command, a log line)
    str(FLAGS),  # as Python prints the list (an error message, a traceback)
    '"server": ' + str(FLAGS).replace("'", '"'),  # as JSON writes it
    '"reason": "' + str(FLAGS).replace("'", '\\"') + '"',  # a list inside a JSON string
    "\n".join(f' "{w}",' for w in FLAGS),  # JSON indented: a word a line
    f"cannot reach the server at http://h.example:8000/v1?{QUERY}: connection refused",
    f"GET /v1/models?{QUERY.replace('&', '&amp;')}",  # as HTML writes a URL
    "ray start --ray-auth-token K1xq7 --password=K2xq7 --secret K3xq7 --key K4xq7 --client-secret K5xq7",
])
def test_a_secret_flags_value_is_hidden_in_every_form(text: str) -> None:
    assert _leaks(redact(text)) == [] and "***" in redact(text)
    assert redact(redact(text)) == redact(text)


def test_a_command_lines_words_after_secret_flags_are_hidden() -> None:
    argv = ["{python}", "-m", "srv", *FLAGS, "--port", "{port}", "-p", "{port}", "--max-tokens", "16"]
    assert redact_value(argv) == ["{python}", "-m", "srv", "--api-key", "***", "--api-key=***", "--hf-token",
                                  "***", "--auth", "***", "-p", "***", "--port", "{port}", "-p", "{port}",
                                  "--max-tokens", "16"]
    assert redact_value({"command": argv, "server_env": {"HF_TOKEN": "K1xq7", "PATH": "/bin"}}) == {
        "command": redact_value(argv), "server_env": {"HF_TOKEN": "***", "PATH": "/bin"}}


@pytest.mark.parametrize("text", [
    "--max-tokens 128 --tokenizer gpt2 --auth-type basic --ssl-keyfile /k.pem --token-budget 5",
    "mkdir -p /tmp/x ./y ~/z && docker run -p 8000:8000 srv -p 8000",  # -p a folder's parents, a port
    str(["-p", "8000", "-p", "{port}", "--no-auth", "--port", "8000"]),
    "https://h.example/x?monkey=1&keyboard=2&sort=key&tokens=3",
    "http://127.0.0.1:8000/v1?model=m&stream=true",
])
def test_text_without_a_credential_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_the_ids_of_the_shipped_suites_are_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Params without a credential are recorded as they are, so every shipped case keeps its id."""
    import llmbench.suite as suite_module
    from llmbench.suite import available_suites, load_suite

    suites = [load_suite(str(f.path)) for f in available_suites().values() if f.origin == "packaged"]
    hidden = {c.id: c.params_dict for s in suites for c in s.cases}
    monkeypatch.setattr(suite_module, "redact_value", lambda v: v)
    plain = {c.id: c.params_dict for s in [load_suite(str(s.path)) for s in suites] for c in s.cases}
    assert len(hidden) > 50 and hidden == plain


def test_a_cases_id_and_params_hold_no_credential() -> None:
    from llmbench.suite import case_from

    common = {"preset": "tiny-llama", "concurrency": 1}
    one = case_from("serving", {**common, "server": ["{python}", "-m", "srv", *FLAGS]})
    other = case_from("serving", {**common, "server": ["{python}", "-m", "srv", *[w.replace("xq7", "zz9")
                                                                                  for w in FLAGS]]})
    assert _leaks(str(one.params_dict) + one.label) == [] and one.id == other.id
    assert one.engine is not None and "K1xq7" in one.engine.model_dump()["command"]  # the server still gets it
    url = case_from("serving", {**common, "url": f"http://h.example:8000/v1?{QUERY}"})
    assert _leaks(str(url.params_dict)) == [] and url.params_dict["url"].startswith("http://h.example:8000/v1?")


SUITE = f"""
name = "planted"
[defaults]
timeout_s = 120
preset = "tiny-llama"
input_len = 8
output_len = 2
num_requests = 2

[[case]]
scenario = "serving"  # a server that prints its command line and exits: its log and reason hold the flags
server = ["{{python}}", "-c", "import sys; print(sys.argv, flush=True); raise SystemExit(3)", {", ".join(
    f'"{w}"' for w in FLAGS)}]
concurrency = 1

[[case]]
scenario = "serving"  # nothing listens there: the reason names the URL
url = "http://127.0.0.1:9/v1?{QUERY}"
rate = 5
"""


@pytest.mark.slow
def test_oneshot_writes_no_planted_credential_anywhere(tmp_path: Path) -> None:
    """The probe: a suite with credentials in both flag forms and a URL with secret query keys, run by
    oneshot (a result set, a log, a bundle with the set, the suite's copy and the report): every file
    under --out and every bundle member is free of them, and so is the terminal."""
    (tmp_path / "planted.toml").write_text(SUITE)
    out = tmp_path / "out"
    # the server's own log (what it prints, written by it, not by llmbench) goes beside --out
    env = {**os.environ, "COLUMNS": "200", "LLMBENCH_SERVING_LOGS": str(tmp_path / "serving-logs"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([sys.executable, "-m", "llmbench", "oneshot", "planted.toml", "--out", str(out), "--cpu"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 1, r.stdout + r.stderr  # both cases fail, as planted
    assert _leaks(r.stdout + r.stderr) == []
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (bundle,) = [p for p in files if p.name.endswith(".tar.gz")]
    with tarfile.open(bundle) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert {"suites/planted.toml", "report.html"} <= set(members) and any(n.endswith(".json") for n in members)
    found = {str(p): _leaks(d.decode("utf-8", "replace")) for p, d in [*files.items(), *members.items()]}
    assert {p: s for p, s in found.items() if s} == {}
    assert b"--api-key" in members["suites/planted.toml"] and b"***" in members["suites/planted.toml"]
    # the bundle's copy cannot start the server: resuming from it asks for the suite file
    again = subprocess.run([sys.executable, "-m", "llmbench", "oneshot", "--resume", str(bundle), "--out",
                            str(tmp_path / "again"), "--cpu"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 2 and "credentials hidden" in again.stderr and "planted.toml" in again.stderr
