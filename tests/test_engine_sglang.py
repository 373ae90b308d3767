"""SGLang as a served engine, added as one module (llmbench/engines/sglang.py) and one suite: the command
line it builds from typed options (SGLang's server arguments), NVLink multicast kept off at tensor
parallelism, the skip that names its install command, and a serving case run through the existing client
against a stand-in OpenAI server started in SGLang's place (SGLang's wheel pins another torch, so it is
not installed here)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from llmbench.engines.served import ServerSite
from llmbench.engines.sglang import SGLangEngine, SGLangOptions, server_command
from llmbench.errors import SuiteError
from llmbench.harness.worker import run_case
from llmbench.precision import DeviceInfo
from llmbench.serving.server import READY_PATHS, ServerProcess, free_port
from llmbench.suite import case_from, load_suite

SITE = ServerSite(host="127.0.0.1", port=8123, model="llama-3-8b", tokenizer_dir="/tok", model_dir="/m",
                  python="/py", precision="bf16")


def options(**values: Any) -> SGLangOptions:
    return SGLangOptions.model_validate({"name": "sglang", **values})


def test_the_command_is_sglangs_launch_server_with_its_own_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    assert server_command(options(), SITE) == [
        "/py", "-m", "sglang.launch_server", "--model-path", "/m", "--tokenizer-path", "/tok", "--load-format",
        "dummy", "--served-model-name", "llama-3-8b", "--host", "127.0.0.1", "--port", "8123", "--dtype",
        "bfloat16", "--disable-radix-cache"]
    fp8 = ServerSite(**{**SITE.__dict__, "precision": "fp8"})
    text = " ".join(server_command(options(tensor_parallel=2, context_length=4096, mem_fraction_static=0.85,
                                           max_running_requests=64, kv_cache_dtype="fp8_e4m3",
                                           prefix_caching=True), fp8))
    for part in ("--dtype bfloat16 --quantization fp8", "--tp-size 2", "--context-length 4096",
                 "--mem-fraction-static 0.85", "--max-running-requests 64", "--kv-cache-dtype fp8_e4m3"):
        assert part in text
    assert "--disable-radix-cache" not in text
    assert "--enable-metrics --enable-cache-report" in text  # the point's prefix-cache figures
    hub = server_command(options(), ServerSite("h", 1, "org/model", "/tok"))
    assert hub[hub.index("--model-path") + 1] == "org/model" and hub[hub.index("--load-format") + 1] == "auto"


def test_sglang_is_ready_only_when_its_health_answers(tmp_path: Path) -> None:
    """SGLang answers /v1/models before its warm-up request has run (/health is 503 until then): its
    server process waits for /health alone; other servers keep both paths."""
    assert SGLangEngine(options()).server(SITE, tmp_path / "log").ready_paths == ("/health",)
    assert ServerProcess(["x"], tmp_path / "log").ready_paths == READY_PATHS


# a server in SGLang's warm-up: its model list answers, its health is 503
_WARMING_UP = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 503); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


@pytest.mark.slow
def test_a_server_still_warming_up_is_not_ready_for_sglang(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with ServerProcess([sys.executable, "-c", _WARMING_UP, str(port)], tmp_path / "any.log") as anyone:
        assert anyone.wait_ready(url, timeout_s=30) >= 0  # its /v1/models answers: ready by the default paths
    sglang = SGLangEngine(options()).server(ServerSite("127.0.0.1", port, "m", "/tok"), tmp_path / "sglang.log")
    sglang.command = [sys.executable, "-c", _WARMING_UP, str(port)]
    with sglang, pytest.raises(RuntimeError, match="did not answer"):
        sglang.wait_ready(url, timeout_s=3)


def test_a_tensor_parallel_server_keeps_nvlink_multicast_off(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    engine = SGLangEngine(options(tensor_parallel=2))
    assert "--enforce-disable-flashinfer-allreduce-fusion" in engine.command(SITE)
    proc = engine.server(SITE, tmp_path / "log")
    assert proc.env is not None and proc.env["NCCL_NVLS_ENABLE"] == "0" and "PATH" in proc.env
    assert "--enforce-disable-flashinfer-allreduce-fusion" not in SGLangEngine(options()).command(SITE)
    assert SGLangEngine(options()).server(SITE, tmp_path / "log").env is None  # one GPU: the environment as it is
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    assert "--enforce-disable-flashinfer-allreduce-fusion" not in engine.command(SITE)


def test_the_suite_names_sglang_and_skips_without_it_naming_the_install_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    suite = load_suite("sglang-llama3-8b")
    assert suite.notes() == [] and len(suite.cases) == 14
    case = suite.cases[0]
    assert case.params_dict["engine"] == "sglang" and case.params_dict["engine_options"] == {"context_length": 4096}
    assert case.params.precision == "bf16" and case.placement.gpus == 1
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None if name == "sglang" else object())
    why = case.scenario_obj().skip_reason(case.params, DeviceInfo("cpu", "CPU test"))
    assert why is not None and "pip install 'llmbench[sglang]'" in why and "sglang==0.5.17" in why
    with pytest.raises(SuiteError, match=r"valid keys: .*mem_fraction_static"):
        case_from("serving", {"preset": "tiny-llama", "concurrency": 1, "engine": {"name": "sglang", "mem": 0.5}})


@pytest.mark.slow
def test_a_serving_case_on_sglang_runs_the_client_against_a_stand_in(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The case process builds the SGLang engine from the case's table, the scenario lays out its site and
    starts it, waits for its health, loads it with the serving client and stops it; SGLang's own command
    is built for that site, and a stand-in OpenAI server (llmbench's fake) answers in its place."""
    built: list[list[str]] = []

    def stand_in(self: SGLangEngine, site: ServerSite) -> list[str]:
        built.append(server_command(self.options, site))
        return [sys.executable, "-m", "llmbench.serving.fake_server", "--host", site.host, "--port", str(site.port),
                "--model", site.model, "--itl-ms", "2"]

    monkeypatch.setattr(SGLangEngine, "missing_reason", classmethod(lambda cls: None))
    monkeypatch.setattr(SGLangEngine, "command", stand_in)
    monkeypatch.setenv("LLMBENCH_SERVING_LOGS", str(tmp_path / "logs"))
    values = {"preset": "tiny-llama", "engine": {"name": "sglang", "context_length": 512}, "input_len": 8,
              "output_len": 4, "concurrency": 2, "num_requests": 4}
    out = run_case(case_from("serving", values).worker_spec("cpu"))
    assert out["status"] == "ok", out.get("reason") or out.get("traceback")
    assert out["metrics"]["failed_requests"]["value"] == 0 and out["metrics"]["tpot_ms"]["value"] > 0
    assert out["info"]["server_exit_code"] is not None and out["info"]["url"].startswith("http://127.0.0.1:")
    [cmd] = built
    assert cmd[cmd.index("--port") + 1] == out["info"]["url"].rsplit(":", 1)[1]
    assert cmd[cmd.index("--load-format") + 1] == "dummy" and "--context-length" in cmd
