"""A base install (`pip install llmbench`, or with an extra such as `ray` that brings no matplotlib) starts:
every command imports without the optional extras, and only a command that draws charts says, in one line,
which extra to install. The extras are hidden from a process of its own (sys.modules[name] = None makes
importing one fail, as where it is not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_compare_support import H100_ENV, H200_ENV, gemm_case, result_set

from llmbench.results import save
from tests.conftest import ROOT

EXTRAS = ("matplotlib", "aiohttp", "transformers", "accelerate", "peft", "bitsandbytes", "torchao",
          "transformer_engine", "vllm", "tensorrt_llm", "sglang", "timm", "sky", "ray")


def bare(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """`llmbench ARGS` through the CLI's main in a process where no extra can be imported."""
    code = (f"import sys\nfor name in {EXTRAS!r}:\n    sys.modules[name] = None\n"
            f"sys.argv = ['llmbench', *{list(args)!r}]\nfrom llmbench.cli import main\nmain()")
    env = {**os.environ, "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.slow
def test_help_list_and_compare_work_without_the_extras(tmp_path: Path) -> None:
    a, b = tmp_path / "h100.json", tmp_path / "h200.json"
    save(result_set(H100_ENV, [gemm_case("bf16", 700.0)]), a)
    save(result_set(H200_ENV, [gemm_case("bf16", 800.0, seed=1)]), b)
    for args in (["--help"], ["list"], ["run", "--help"], ["compare", str(a), str(b)]):
        r = bare(*args, cwd=tmp_path)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stdout + r.stderr)
    assert "gemm" in r.stdout  # compare's table of the joined case


def test_a_command_that_draws_names_the_extra_in_one_line(tmp_path: Path) -> None:
    a = tmp_path / "h100.json"
    save(result_set(H100_ENV, [gemm_case("bf16", 700.0)]), a)
    r = bare("report", str(a), "--out", str(tmp_path / "report.html"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == ["error: llmbench report needs matplotlib, which is not installed: pip "
                                             "install 'llmbench[report]'"]
    assert not (tmp_path / "report.html").exists()


@pytest.mark.slow
def test_no_command_imports_matplotlib_at_start() -> None:
    """Even where it is installed: charts are drawn by the commands that draw, after they start."""
    code = "import sys, llmbench.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr
