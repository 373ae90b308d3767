"""Training scenarios on the CPU with tiny models, through the same code the GPU runs: the learnable
data, the layer-by-layer quantized build, the qlora / trainer / fp8_train scenarios, out-of-memory
as a result, the FLOP formula, the max-batch search, and the base diff of a trainer result set."""

from __future__ import annotations

import json
import math
import statistics
from typing import Any

import pytest

from llmbench.engines.base import ENGINES, ModelRef, TrainingEngine, TrainOptions
from llmbench.harness.isolation import ChildOutcome
from llmbench.harness.max_batch import PROBE_SETTINGS, search_max_batch
from llmbench.harness.worker import run_case
from llmbench.models.synthetic import progression_batch
from llmbench.models.train_flops import train_flops
from llmbench.precision import DeviceInfo
from llmbench.suite import SUITES_DIR, case_from, load_suite

CPU = DeviceInfo("cpu", "CPU test")
FAST = {"warmup_iters": 1, "min_iters": 3, "min_seconds": 0.0, "min_sample_s": 0.0}


def spec(scenario: str, params: dict[str, Any], **settings: Any) -> dict[str, Any]:
    return case_from(scenario, params, {**FAST, **settings}).worker_spec("cpu")


def test_progression_data_is_deterministic_and_follows_its_rule() -> None:
    a = progression_batch(1000, 4, 10, step=3, seed=1, span=97)
    assert a.equal(progression_batch(1000, 4, 10, step=3, seed=1, span=97))
    assert not a.equal(progression_batch(1000, 4, 10, step=4, seed=1, span=97))
    assert int(a.max()) < 97
    stride = (a[:, 1] - a[:, 0]) % 97
    assert ((a[:, 1:] - a[:, :-1]) % 97 == stride[:, None]).all()


@pytest.mark.slow
def test_loss_falls_on_the_learnable_task() -> None:
    engine = ENGINES.get("hf")()
    assert isinstance(engine, TrainingEngine)
    s = engine.load_for_training(ModelRef(model="tiny-llama"),
                                 TrainOptions(method="full", dtype="fp32", layers=1, lr=3e-3), CPU)
    data = [progression_batch(s.vocab_size, 8, 16, step=i) for i in range(40)]
    for b in data:
        s.step(b)
    losses = s.loss_history()
    assert len(losses) == 40
    assert losses[0] > 0.9 * math.log(s.vocab_size), losses  # starts near chance over the vocabulary
    assert sum(losses[-5:]) / 5 < 0.9 * math.log(128), losses  # below chance over the task's 128 ids: the rule


def test_layerwise_build_peaks_at_one_bf16_layer() -> None:
    import torch
    from torch import nn

    from llmbench.models.build import make_config
    from llmbench.models.quantized_build import build_layerwise, decoder_layers

    cfg = make_config("tiny-llama")
    cfg.num_hidden_layers = 8
    holder: dict[str, Any] = {}
    peaks: list[int] = []

    def live_bytes() -> int:
        m = holder["model"]
        return sum(t.numel() * t.element_size() for t in [*m.parameters(), *m.buffers()] if t.device.type != "meta")

    class Int8Linear(nn.Module):  # stand-in for nf4: int8 weights and a per-row scale
        def __init__(self, lin: nn.Linear) -> None:
            super().__init__()
            w = lin.weight.data.float()
            scale = w.abs().amax(1, keepdim=True) / 127
            self.register_buffer("scale", scale.to(torch.bfloat16))
            self.register_buffer("qweight", (w / scale).round().to(torch.int8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ (self.qweight.to(x.dtype) * self.scale).t()

    def quantize(lin: nn.Linear) -> nn.Module:
        if "model" in holder:  # the bf16 layer is whole when its first linear is quantized
            peaks.append(live_bytes())
        return Int8Linear(lin)

    import transformers

    real = transformers.AutoModelForCausalLM.from_config

    def grab(*a: Any, **kw: Any) -> Any:
        holder["model"] = real(*a, **kw)
        return holder["model"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transformers.AutoModelForCausalLM, "from_config", grab)
        model = build_layerwise(cfg, device="cpu", quantize=quantize)
    layers = decoder_layers(model)
    assert not any(p.device.type == "meta" for p in model.parameters())
    assert not any(isinstance(m, nn.Linear) for m in layers.modules())
    assert model(torch.randint(0, 100, (1, 8))).logits.shape == (1, 8, cfg.vocab_size)
    # what the whole model would take in bf16, and one layer of it
    layer_bf16 = 2 * sum(m.qweight.numel() for m in layers[0].modules() if isinstance(m, Int8Linear))
    outside = sum(p.numel() * 2 for n, p in model.named_parameters() if ".layers." not in n)
    whole_bf16 = outside + 8 * layer_bf16
    final = live_bytes()
    assert max(peaks) <= final + layer_bf16  # never more than the result plus one bf16 layer
    assert max(peaks) < whole_bf16
    # the layers at their peak: 8 layers in int8 (half of bf16) plus one layer still in bf16, where a
    # bf16-first build would hold all 8 in bf16
    assert max(peaks) - outside <= 8 * layer_bf16 // 2 + layer_bf16 + 2**16 < 8 * layer_bf16


def test_qlora_session_builds_nf4_and_trains_its_adapters() -> None:
    """bitsandbytes' CPU kernels (0.48+) quantize to nf4 here: the engine's QLoRA path itself, which
    the scenario still reserves for a GPU."""
    bnb = pytest.importorskip("bitsandbytes")
    s = ENGINES.get("hf")().load_for_training(
        ModelRef(model="tiny-llama"), TrainOptions(method="qlora", layers=1, gradient_checkpointing=True), CPU)
    base = s.model.base_model.model.model.layers[0].self_attn.q_proj.base_layer
    assert isinstance(base, bnb.nn.Linear4bit) and base.weight.quant_type == "nf4"
    lora = s.model.base_model.model.model.layers[0].self_attn.q_proj
    before = lora.lora_B["default"].weight.detach().clone()
    for i in range(2):
        s.step(progression_batch(s.vocab_size, 2, 8, step=i))
    assert len(s.loss_history()) == 2 and not lora.lora_B["default"].weight.equal(before)
    assert 0 < s.trainable_params < s.frozen_params and s.info()["nf4_double_quant"] is True
    path = s.code_path()  # read from the built model: nf4 under peft's LoRA layer, recomputation on
    assert path["frozen_base"].startswith("nf4 weights") and path["frozen_base"].endswith("double quant True")
    assert path["linears"] == {"peft.Linear4bit": 7, "torch.Linear": 1}  # as the H100 and H200 recorded at 8B
    assert path["gradient_checkpointing"] is True and path["optimizer"] == "AdamW"


def test_train_flops_formula() -> None:
    assert train_flops(trainable=10, frozen=0, layers=1, hidden=1, seq=1, tokens=1) == 60 + 12
    assert train_flops(trainable=0, frozen=10, layers=2, hidden=3, seq=4, tokens=5) == 200 + 12 * 2 * 3 * 4 * 5
    assert (train_flops(trainable=1, frozen=2, layers=1, hidden=1, seq=1, tokens=1, recompute=True)
            - train_flops(trainable=1, frozen=2, layers=1, hidden=1, seq=1, tokens=1)) == 2 * 3 + 4


@pytest.mark.slow
def test_qlora_scenario_lora_and_full_run_nf4_is_skipped() -> None:
    base = {"model": "tiny-llama", "layers": 1, "seq_len": 16, "batch_size": 2, "gradient_checkpointing": True}
    outs = {}
    for method in ("lora", "full"):
        out = outs[method] = run_case(spec("qlora", {**base, "method": method}))
        assert out["status"] == "ok", out
        assert {"step_ms", "train_tokens_per_s", "train_samples_per_s", "train_loss"} <= set(out["metrics"])
        assert len(out["metrics"]["step_ms"]["samples"]) == 3
        assert out["info"]["method"] == method and len(out["info"]["loss_curve"]) == out["info"]["steps"] >= 4
    info = outs["full"]["info"]
    assert info["trainable_params"] > 0 and info["flops_per_step"] < info["hardware_flops_per_step"]
    lora = outs["lora"]["info"]  # the LoRA case above (running it again measured the same case twice more)
    assert 0 < lora["trainable_params"] < info["trainable_params"] and lora["frozen_params"] > 0
    assert lora_path(outs["lora"]) == {"peft.Linear": 7, "torch.Linear": 1}
    full = run_case(spec("qlora", {**base, "method": "full", "gradient_checkpointing": False}))["code_path"]
    assert full["linears"] == {"torch.Linear": 8} and full["gradient_checkpointing"] is False
    assert "frozen_base" not in full
    skipped = run_case(spec("qlora", {**base, "method": "qlora"}))
    assert skipped["status"] == "skipped" and "bitsandbytes" in skipped["reason"] and "GPU" in skipped["reason"]


def lora_path(out: dict[str, Any]) -> dict[str, int]:
    """The LoRA case's linears: the 7 adapted projections (each wraps its base and adapters), and lm_head."""
    assert out["status"] == "ok", out
    assert out["code_path"]["gradient_checkpointing"] is True and "frozen_base" not in out["code_path"]
    return out["code_path"]["linears"]


def test_out_of_memory_is_a_result_with_its_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from llmbench.engines import hf_train

    def boom(self: Any, batch: Any) -> None:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(hf_train.HFTrainingSession, "step", boom)
    out = run_case(spec("qlora", {"model": "tiny-llama", "layers": 1, "method": "full", "batch_size": 64,
                                  "seq_len": 16}))
    assert out["status"] == "oom"
    assert out["info"]["config"]["batch_size"] == 64 and out["info"]["config"]["method"] == "full"
    assert out["info"]["oom"]["error"] == "OutOfMemoryError"


@pytest.mark.slow
def test_trainer_excludes_warmup_and_diffs_against_fp32() -> None:
    from llmbench.analysis.basediff import base_diff
    from llmbench.results import CaseResult
    from tests.test_compare_support import refs, result_set

    cases = []
    for precision in ("fp32", "bf16"):
        params = {"model": "tiny-t5", "precision": precision, "batch_size": 2, "seq_len": 16}
        out = run_case(spec("trainer", params, warmup_iters=2, min_iters=3))
        assert out["status"] == "ok", out
        info, metrics = out["info"], out["metrics"]
        assert info["warmup_steps"] == 2 and info["timed_steps"] == 3 and info["steps"] == 5
        (start, end), = info["windows_unix"]  # the timed steps' wall-clock window, as CaseContext.measure notes it
        assert 0 < end - start < 600
        assert len(info["host_probe_us"]) == 2  # the host core's speed as the window opened and closed
        assert len(metrics["step_ms"]["samples"]) == 3 and len(metrics["train_samples_per_s"]["samples"]) == 3
        assert metrics["trainer_reported_samples_per_s"]["value"] > 0
        path = out["code_path"]  # what ran, read from the Trainer: the amp mode it actually used
        assert path["engine"] == "hf-trainer" and path["amp"] == ("bf16" if precision == "bf16" else "none (fp32)")
        assert path["optimizer"].startswith("AdamW") and path["layers"] == ["Linear"]
        from llmbench.scenarios.trainer import TrainerParams

        pdict = TrainerParams.model_validate(params).model_dump(mode="json")
        from llmbench.ids import case_id

        cases.append(CaseResult(id=case_id("trainer", pdict), scenario="trainer", params=pdict, status="ok",
                                metrics=metrics, info=info))
    bd = base_diff(refs(result_set({"gpu": {"name": "CPU", "slug": "cpu"}}, cases, suite="trainer-tiny"))[0],
                   "precision", "fp32")
    row = next(r for r in bd.rows if r.metric == "train_samples_per_s")
    assert row.diff_pct == pytest.approx((row.value / row.base_value - 1) * 100)
    assert "precision=bf16" in row.case


def test_trainer_skips_what_a_cpu_cannot_do() -> None:
    for params, why in (({"precision": "fp16"}, "fp16"), ({"tf32": True}, "tf32")):
        out = run_case(spec("trainer", {"model": "tiny-t5", **params}))
        assert out["status"] == "skipped" and why in out["reason"]


def test_fp8_train_bf16_runs_and_fp8_recipes_skip_with_reasons() -> None:
    out = run_case(spec("fp8_train", {"model": "tiny-llama", "layers": 1, "recipe": "bf16", "seq_len": 16}))
    assert out["status"] == "ok", out
    assert "speedup_vs_bf16" not in out["metrics"] and len(out["info"]["bf16_loss_curve"]) == 4
    assert out["code_path"]["linears"] == {"torch.Linear": 8} and "fp8" not in out["code_path"]
    for recipe in ("torchao-tensorwise", "te-delayed"):
        skipped = run_case(spec("fp8_train", {"model": "tiny-llama", "recipe": recipe}))
        assert skipped["status"] == "skipped" and "compute capability 8.9" in skipped["reason"]


def test_torchao_fp8_conversion_leaves_lm_head_in_bf16() -> None:
    pytest.importorskip("torchao")
    from llmbench.engines.hf_train import _apply_fp8
    from llmbench.models.build import build_model

    m = build_model(model="tiny-llama")
    _, info = _apply_fp8(m, "torchao-tensorwise")
    assert info["fp8_linears"] == 4 * 7
    assert type(m.lm_head).__name__ == "Linear"


def fake_run(threshold: int, fail_at: int | None = None) -> tuple[Any, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def run(s: dict[str, Any], env: dict[str, str], timeout: float) -> ChildOutcome:
        seen.append(s)
        b = s["params"]["batch_size"]
        if fail_at is not None and b == fail_at:
            return ChildOutcome("failed", "planted")
        return ChildOutcome("ok" if b <= threshold else "oom", None if b <= threshold else "OutOfMemoryError")

    return run, seen


@pytest.mark.parametrize("threshold", [1, 5, 8, 13, 1024])
def test_max_batch_search_finds_the_threshold(threshold: int) -> None:
    run, seen = fake_run(threshold)
    spec = {"scenario": "qlora", "params": {"batch_size": 1, "max_batch": True}, "settings": {}}
    s = search_max_batch(spec, {}, 10.0, run=run)
    assert s.best == threshold
    assert all(p["params"]["max_batch"] is False and p["settings"] == PROBE_SETTINGS for p in seen)
    assert len(seen) <= 2 * math.ceil(math.log2(threshold + 1)) + 2


def test_max_batch_search_stops_on_a_failure_and_reports_none_when_nothing_fits() -> None:
    run, _ = fake_run(100, fail_at=8)
    s = search_max_batch({"scenario": "qlora", "params": {"batch_size": 1}}, {}, 10.0, run=run)
    assert s.best == 4 and s.stopped and "failed" in s.stopped
    run, _ = fake_run(0)
    s = search_max_batch({"scenario": "qlora", "params": {"batch_size": 1}}, {}, 10.0, run=run)
    assert s.best is None and s.probes[0]["status"] == "oom"


@pytest.mark.slow
def test_runner_measures_a_max_batch_case_at_the_batch_found(fault_plugin: str, tmp_path: Any) -> None:
    from llmbench.harness.runner import RunOptions, run_suite
    from llmbench.results import load
    from tests.conftest import write

    path = write(tmp_path, """name = "maxb"
[defaults]
min_iters = 1
min_seconds = 0
warmup_iters = 0
[[case]]
scenario = "batch_oom"
fits_up_to = 6
max_batch = true
""")
    suite = load_suite(str(path))
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu")))
    (c,) = rs.cases
    assert c.status == "ok" and c.info["batch_size_run"] == 6 and c.info["max_batch"]["batch_size"] == 6
    assert [p["batch_size"] for p in c.info["max_batch"]["probes"]] == [1, 2, 4, 8, 6, 7]
    # its params keep the search's start (batch_size 1): the summaries name the batch the metrics are of
    from llmbench.analysis.inputs import SetRef
    from llmbench.report.terminal import result_table, to_terminal_text
    from llmbench.report.views import set_tables

    found = "measured at batch_size=6, the largest that fits"
    text = " ".join(to_terminal_text([t]) for t in set_tables(SetRef("cpu", rs)))
    assert found in text
    from rich.console import Console

    console = Console(width=400, record=True)
    console.print(result_table(rs))
    assert found in console.export_text()


@pytest.mark.slow
def test_a_measurement_that_runs_out_of_memory_where_its_probe_fit_steps_down(fault_plugin: str,
                                                                             tmp_path: Any) -> None:
    """Probes fit up to 6, the longer measurement only up to 4: the runner records 6 as `oom` in the
    measurement, bisects on below it (5 fits its probe, not the measurement), and measures at 4; a
    resumed search replays the measurements' `oom`s and lands on 4 without a probe."""
    from llmbench.harness.max_batch import ProbeLog, probes_path, search_max_batch
    from llmbench.harness.runner import RunOptions, run_suite
    from llmbench.harness.ui import UI
    from llmbench.results import load
    from tests.conftest import write

    class Heard(UI):
        def __init__(self) -> None:
            self.heard: list[dict[str, Any]] = []

        def case_probe(self, case: Any, probe: dict[str, Any]) -> None:
            self.heard.append(probe)

    path = write(tmp_path, """name = "maxb"
[defaults]
min_iters = 2
min_seconds = 0
warmup_iters = 0
[[case]]
scenario = "batch_oom"
fits_up_to = 6
measured_fits_up_to = 4
max_batch = true
""")
    suite = load_suite(str(path))
    ui = Heard()
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=tmp_path / "out", device="cpu"), ui))
    (c,) = rs.cases
    assert c.status == "ok" and c.info["batch_size_run"] == 4 and c.info["max_batch"]["batch_size"] == 4
    probes = c.info["max_batch"]["probes"]
    assert [(p["batch_size"], p["status"], p.get("stage")) for p in probes] == [
        (1, "ok", None), (2, "ok", None), (4, "ok", None), (8, "oom", None), (6, "ok", None),
        (7, "oom", None), (6, "oom", "measurement"), (5, "ok", None), (5, "oom", "measurement")]
    assert "planted: 2 steps at batch 6" in probes[6]["reason"] and ui.heard == probes  # heard in order

    # the probe file a resumed run reads: a measurement's oom, recorded after the probe's ok, wins
    log = ProbeLog(probes_path(tmp_path / "set.json", "c"), "c", "slug")
    log.save(probes)
    replayed = search_max_batch({"scenario": "qlora", "params": {"batch_size": 1}}, {}, 10.0, log=log,
                                run=lambda *a: pytest.fail("every batch was recorded"))
    assert replayed.best == 4


@pytest.mark.slow
def test_runner_resumes_an_interrupted_max_batch_search(fault_plugin: str, tmp_path: Any) -> None:
    """Ctrl-C after two probes keeps them; `--resume --force` searches afresh (and records its own);
    `--resume` replays what was recorded, probes the rest, measures, and deletes the record."""
    from llmbench.harness.max_batch import PROBES_DIR
    from llmbench.harness.runner import RunOptions, run_suite
    from llmbench.harness.ui import UI
    from llmbench.results import load
    from tests.conftest import write

    class Probes(UI):
        def __init__(self, stop_after: int | None = None) -> None:
            self.heard: list[dict[str, Any]] = []
            self.stop_after = stop_after

        def case_probe(self, case: Any, probe: dict[str, Any]) -> None:
            self.heard.append(probe)
            if len(self.heard) == self.stop_after:
                raise KeyboardInterrupt  # as Ctrl-C, or SIGTERM from `timeout`, right after this probe ended

    path = write(tmp_path, """name = "maxb"
[defaults]
min_iters = 1
min_seconds = 0
warmup_iters = 0
[[case]]
scenario = "batch_oom"
fits_up_to = 2
max_batch = true
""")
    suite = load_suite(str(path))
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, suite.cases, RunOptions(out_dir=out, device="cpu"), Probes(stop_after=2))
    (record,) = out.glob(f"*/{PROBES_DIR}/*/*.json")  # <slug>/.max_batch/<result-set stem>/<case>.json
    assert [p["batch_size"] for p in json.loads(record.read_text())["probes"]] == [1, 2]

    forced = Probes(stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        run_suite(suite, suite.cases, RunOptions(out_dir=out, device="cpu", resume=True, force=True), forced)
    assert forced.heard == [{"batch_size": 1, "status": "ok", "reason": None}]  # run again, not replayed

    resumed = Probes()
    rs = load(run_suite(suite, suite.cases, RunOptions(out_dir=out, device="cpu", resume=True), resumed))
    (c,) = rs.cases
    assert c.status == "ok" and c.info["batch_size_run"] == 2
    assert [(p["batch_size"], bool(p.get("resumed"))) for p in c.info["max_batch"]["probes"]] == \
        [(1, True), (2, False), (4, False), (3, False)]
    assert c.info["max_batch"]["resumed"] == 1 and resumed.heard == c.info["max_batch"]["probes"]
    assert not record.exists() and not list(out.glob(f"*/{PROBES_DIR}"))  # measured ok: the record is gone


@pytest.mark.parametrize("name", ["qlora-tiny", "trainer-tiny", "fp8-training-tiny", "qlora-llama3",
                                  "trainer-variations", "fp8-training", "ddp-tiny", "ddp-scaling"])
def test_training_suites_validate(name: str) -> None:
    suite = load_suite(str(SUITES_DIR / f"{name}.toml"))
    assert suite.cases and suite.name == name


@pytest.mark.slow
@pytest.mark.parametrize("parallel", ["ddp", "fsdp"])
def test_ddp_launcher_two_gloo_processes(parallel: str) -> None:
    """Two gloo ranks, then the bare model and the wrapped model on one process: the efficiency divides by
    the bare rate, the wrapper's cost compares it with the wrapped one, every rank records its code path."""
    out = run_case(spec("ddp", {"model": "tiny-llama", "layers": 1, "placement": {"gpus": 2}, "batch_size": 2,
                                "seq_len": 16, "parallel": parallel}))
    assert out["status"] == "ok", out
    metrics = out["metrics"]
    info = {k: ({int(r): x for r, x in v.items()} if k.startswith("rank_") else v) for k, v in out["info"].items()}
    assert set(info["rank_step_ms"]) == {0, 1}
    assert all(len(v) == 3 for v in info["rank_step_ms"].values())
    assert len(metrics["step_ms"]["samples"]) == 3
    assert len(info["one_gpu_step_ms"]) == 3 and len(info["bare_one_gpu_step_ms"]) == 3
    assert out["info"]["launcher"] == "torchrun"  # started by the harness's launcher, not by the scenario
    assert out["code_path"]["launcher"]["nproc"] == {"ranks": 2, "bare": 1, "one_gpu": 1}
    n_rate = 4 / statistics.median(info["rank_step_ms"][0]) * 1e3
    bare = info["bare_one_gpu_samples_per_s"]
    assert bare == pytest.approx(2 / statistics.median(info["bare_one_gpu_step_ms"]) * 1e3)
    assert metrics["scaling_efficiency"]["value"] == pytest.approx(n_rate / (2 * bare))
    assert metrics["wrapper_cost"]["value"] == pytest.approx(bare / info["one_gpu_samples_per_s"] - 1)
    paths = info["rank_code_path"]
    assert set(paths) == {0, 1} and all(p["world_size"] == 2 and p["backend"] == "gloo" for p in paths.values())
    assert out["code_path"]["wrapper"].startswith(parallel) and out["code_path"]["same_on_every_rank"] is True
    assert out["code_path"]["baseline"].startswith("none") and out["code_path"]["env"]["NCCL_NVLS_ENABLE"] is not None
    if parallel == "ddp":
        assert out["code_path"]["bucket_cap_mb"] > 0 and "no_sync" in out["code_path"]["exposed_comm"]
        assert metrics["exposed_comm_ms"]["value"] == pytest.approx(info["rank_exposed_comm_ms"][0])
        no_sync = info["rank_no_sync_step_ms"][0]
        assert info["rank_exposed_comm_ms"][0] == pytest.approx(
            statistics.median(info["rank_step_ms"][0]) - statistics.median(no_sync))
    else:
        assert "sharding" in out["code_path"] and "exposed_comm_ms" not in metrics
    flags = metrics["scaling_efficiency"]["flags"]
    assert bool(flags) == (metrics["scaling_efficiency"]["value"] > 1) == bool(info.get("notes"))


def test_scaling_efficiency_divides_by_n_times_the_bare_rate() -> None:
    from llmbench.scenarios.ddp import scaling_efficiency

    assert scaling_efficiency(30.0, 2, 20.0) == pytest.approx(0.75)
    assert scaling_efficiency(80.0, 4, 20.0) == pytest.approx(1.0)
    assert scaling_efficiency(40.0, 2, 16.0) == pytest.approx(1.25)


def test_an_efficiency_above_one_is_flagged_with_the_measured_rates() -> None:
    from llmbench.scenarios.ddp import above_linear_note

    assert above_linear_note(1.0, 2, 40.0, 20.0, 19.0) is None
    assert above_linear_note(0.9, 2, 36.0, 20.0, 19.0) is None
    note = above_linear_note(1.25, 2, 40.0, 16.0, 15.0)
    assert note is not None and "above 1" in note
    assert all(figure in note for figure in ("1.250", "40 samples/s", "16 samples/s", "(32)", "15 samples/s"))


def test_ddp_asks_for_more_gpus_than_visible_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from llmbench.placement import Placement
    from llmbench.scenarios.ddp import DDP, DDPParams

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    reason = DDP(placement=Placement(gpus=4)).skip_reason(DDPParams(), DeviceInfo("cuda", "H200", (9, 0), 139.8))
    assert reason and "asks for 4 GPUs; 1 visible" in reason
