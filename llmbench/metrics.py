"""The metric catalogue: every public metric name, its unit, and which direction is better.

Metric names are a public interface (docs/design.md): the unit is in the name, and `compare` uses
`better` to orient ratios so that > 1 always means "better than the baseline".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower", "neither"]


@dataclass(frozen=True)
class MetricDef:
    """`family`: metrics that are one measurement seen two ways (TPOT and decode tok/s are reciprocals)
    share a family, so an average over metrics counts that measurement once; by default a metric is
    its own family. `per_batch`: the value grows with the batch (a step's time, its memory, its energy),
    so between sides measured at different batches (each GPU's own answer to a max_batch search) it is
    shown, not ratioed; rates per token or sample stay comparable. `additive`: the figure of copies of a
    case run side by side is the sum of theirs (a throughput, an energy), as placement.replicas combines them;
    a latency (ms) pools their samples, anything else keeps the worst copy's (harness/launchers/replicas.py).
    `at_most`: a share that cannot exceed this where its ceiling is a roof; a value above it is flagged (the
    ceiling it was read against was measured, not a bound). `version`: the definition's version, raised
    when what the name measures changes (a new window, a new formula): each measured value records it
    (MetricResult.definition; a set written before it was recorded reads as 1), and no rule pools or
    ratios values of two versions."""

    name: str
    unit: str
    better: Better
    description: str
    family: str | None = None
    per_batch: bool = False
    additive: bool = False
    at_most: float | None = None
    version: int = 1

    @property
    def family_name(self) -> str:
        return self.family or self.name


# Families of metrics derived from one timing (see MetricDef.family).
DECODE_RATE, PREFILL_RATE, E2E_RATE, TRAIN_STEP_RATE, OP_RATE = (
    "decode_rate", "prefill_rate", "e2e_rate", "train_step_rate", "op_rate"
)


# Units of the speed metrics: what a scenario's all-metric geometric mean and a GPU's spread between
# machines pool (memory, quality, energy and efficiency ratios get their own per-metric means only).
SPEED_UNITS = frozenset({"ms", "tok/s", "req/s", "samples/s", "TFLOP/s", "TB/s", "GB/s"})

_DEFS = [
    # generation / serving (definitions follow vLLM bench and NVIDIA AIPerf)
    MetricDef("ttft_ms", "ms", "lower",
              "time to first token: request start to the first output token", family=PREFILL_RATE),
    MetricDef("tpot_ms", "ms", "lower",
              "time per output token after the first: (E2E - TTFT) / (N - 1)", family=DECODE_RATE),
    MetricDef("itl_ms", "ms", "lower",
              "inter-token latency: each gap between consecutive output tokens", family=DECODE_RATE),
    MetricDef("e2e_ms", "ms", "lower", "end-to-end latency of one request (or one batch)", family=E2E_RATE),
    MetricDef("prefill_tokens_per_s", "tok/s", "higher",
              "input tokens processed per second of TTFT", family=PREFILL_RATE, additive=True),
    MetricDef("decode_tokens_per_s", "tok/s", "higher", "output tokens after the first per second", family=DECODE_RATE,
              additive=True),
    MetricDef("output_tokens_per_s", "tok/s", "higher", "all output tokens over E2E", family=E2E_RATE,
              additive=True),
    MetricDef("roofline_efficiency", "ratio", "higher",
              "roofline bound time / measured time: a share of the bound, against the spec or measured ceilings "
              "the case records (info.bandwidth_source, info.roofline_ceilings)", at_most=1.0),
    MetricDef("peak_memory_gib", "GiB", "lower", "peak memory allocated by torch during the case", per_batch=True),
    MetricDef("energy_j_per_token", "J/tok", "lower", "NVML energy over the timed window per output token"),
    MetricDef("logits_rel_error", "ratio", "lower", "||logits - ref|| / ||ref|| against the bf16 reference"),
    MetricDef("kl_divergence", "nats", "lower", "KL(ref || this) of next-token distributions, mean per position"),
    MetricDef("top1_agreement", "ratio", "higher", "share of positions whose argmax matches the reference"),
    # accuracy on real text (generate with quality = true; llmbench.models.quality): the reference is the
    # bf16 model of the same weights (for smollm2-135m: the dequantized Q4_1 GGUF, not the original model)
    MetricDef("perplexity", "ppl", "lower", "exp(mean negative log-likelihood per token) over the fixed corpus "
              "window (pydoc_data.topics)"),
    MetricDef("perplexity_increase", "ratio", "lower", "perplexity / the bf16 reference's perplexity - 1, on the "
              "same window"),
    MetricDef("greedy_agreement", "ratio", "higher", "share of the reference's greedy tokens reproduced before the "
              "first difference, mean over the fixed prompts"),
    MetricDef("task_accuracy", "ratio", "higher", "share of the shipped task set's items answered right "
              "(the most likely of four choices)"),
    MetricDef("task_accuracy_drop", "ratio", "lower", "the bf16 reference's task accuracy minus this case's"),
    MetricDef("compile_s", "s", "lower", "compilation and warm-up cost, kept out of the timed window"),
    MetricDef("request_throughput_per_s", "req/s", "higher", "completed requests per second", additive=True),
    MetricDef("goodput_per_s", "req/s", "higher", "requests per second that met every latency objective",
              additive=True),
    MetricDef("client_queue_ms", "ms", "lower", "time a request waited in the client before it was sent"),
    MetricDef("achieved_request_rate_per_s", "req/s", "neither",
              "requests sent per second, first to last send (beside the rate asked)"),
    MetricDef("failed_requests", "requests", "lower", "requests that ended in an error (excluded from latencies)"),
    MetricDef("output_tokens_per_s_per_gpu", "tok/s/GPU", "higher", "output tokens per second per server GPU"),
    MetricDef("tokens_per_s_per_user", "tok/s", "higher",
              "decode speed one request sees: 1000 / its TPOT", family=DECODE_RATE),
    MetricDef("ttft_intended_ms", "ms", "lower", "TTFT from the intended send time (coordinated omission "
              "corrected: the client's lateness included)", family=PREFILL_RATE),
    MetricDef("e2e_intended_ms", "ms", "lower", "end-to-end latency from the intended send time", family=E2E_RATE),
    MetricDef("capacity_concurrency", "requests", "higher",
              "the highest concurrency that met the SLO: the median of the search's refinements, with their interval"),
    MetricDef("capacity_rate", "req/s", "higher",
              "the highest request rate that met the SLO: the median of the search's refinements, with their interval"),
    MetricDef("client_cpu_share", "ratio", "neither",
              "share of one core the client's busiest process used over the point (near 1: the client was the limit)"),
    MetricDef("client_loop_lag_ms", "ms", "neither", "how late the client's event loop woke for its 50 ms ticks"),
    MetricDef("prefix_cache_hit_rate", "ratio", "higher",
              "prompt tokens the server found in its prefix cache / tokens it looked up over the point: the deltas "
              "of its own counters (info.prefix_cache.server_counters names them)"),
    MetricDef("cached_prompt_fraction", "ratio", "higher",
              "cached / prompt tokens summed over the point's requests, from each answer's usage (cached_tokens)"),
    # training
    MetricDef("step_ms", "ms", "lower", "one optimizer step (forward, backward, update)", family=TRAIN_STEP_RATE,
              per_batch=True),
    MetricDef("train_samples_per_s", "samples/s", "higher", "training samples per second", family=TRAIN_STEP_RATE,
              additive=True),
    MetricDef("train_tokens_per_s", "tok/s", "higher", "training tokens per second", family=TRAIN_STEP_RATE,
              additive=True),
    MetricDef("mfu", "ratio", "higher", "model FLOPs utilisation against the GPU's dense peak"),
    MetricDef("max_batch_size", "samples", "higher",
              "the largest batch that fits, as a max_batch case's search found it (from its info.max_batch)"),
    MetricDef("train_loss", "loss", "neither", "training loss at the end of the timed window"),
    MetricDef("energy_j_per_sample", "J/sample", "lower", "NVML energy per sample (trained or inferred)"),
    MetricDef("samples_per_j", "samples/J", "higher", "samples per joule of NVML energy: 1 / energy_j_per_sample"),
    MetricDef("infer_samples_per_s", "samples/s", "higher", "inference samples (e.g. images) per second",
              additive=True),
    MetricDef("cpu_ms_per_step", "ms", "lower",
              "CPU time of the main process per training step (process_time; DataLoader workers not counted)"),
    MetricDef("gpu_busy_fraction", "ratio", "higher",
              "time the GPU ran a kernel or copy (union of the profiler's kernel intervals) / wall time, over "
              "profiled windows of steps, data loading included; gaps between launches are idle"),
    MetricDef("gpu_kernel_ms_per_step", "ms", "neither",
              "GPU kernel time per step (union of the profiler's kernel intervals, overlaps once), per window"),
    MetricDef("gpu_span_fraction", "ratio", "neither",
              "CUDA-event span of a step's model work / the step's wall time: counts the GPU's waits between "
              "launches as busy (the pre-profiler gpu_busy_fraction)"),
    MetricDef("model_time_fraction", "ratio", "neither",
              "on a CPU: wall time in forward/backward/update / the step's wall time (the rest is data loading)"),
    MetricDef("trainer_reported_samples_per_s", "samples/s", "higher",
              "transformers Trainer's own train_samples_per_second (over every step, the first ones included)"),
    MetricDef("scaling_efficiency", "ratio", "higher",
              "samples/s on N GPUs / (N x samples/s of the same model, per-GPU batch and precision trained "
              "bare on one GPU: no DDP/FSDP wrapper, no torch.distributed)"),
    MetricDef("wrapper_cost", "ratio", "lower",
              "bare one-GPU samples/s / wrapped (DDP or FSDP2, world size 1) samples/s - 1: the wrapper's own "
              "cost on one GPU (0: none)"),
    MetricDef("exposed_comm_ms", "ms", "lower",
              "communication a step did not hide behind compute: median step time minus the median of the same "
              "steps without gradient sync (DDP no_sync()), rank 0"),
    MetricDef("loss_diff_vs_bf16", "loss", "lower",
              "|mean loss - bf16 mean loss| over the same steps, seed and data (fp8 training against bf16)"),
    # loss curves read by llmbench.measure.loss_curve's fixed rules
    MetricDef("final_loss", "loss", "neither", "mean training loss over the last quarter of the steps (at least 5)"),
    MetricDef("final_loss_diff_vs_bf16", "loss", "lower",
              "mean over the final steps of (this loss - the bf16 loss) at the same step on the same batch, with a "
              "moving-block bootstrap interval over those steps (fp8 training against bf16)"),
    MetricDef("loss_spikes", "steps", "lower",
              "steps whose loss exceeds the median of the 20 steps before it by more than 0.5 nats, or is not finite"),
    MetricDef("heldout_loss_before", "loss", "neither",
              "mean next-token loss on the held-out corpus window before any training step"),
    MetricDef("heldout_loss_after", "loss", "lower",
              "mean next-token loss on the held-out corpus window after the last training step"),
    # layers and ceilings
    MetricDef("fwd_ms", "ms", "lower", "forward pass time"),
    MetricDef("fwd_bwd_ms", "ms", "lower", "forward plus backward pass time"),
    MetricDef("tflops", "TFLOP/s", "higher", "dense floating-point throughput (2*M*N*K per matmul)", family=OP_RATE),
    MetricDef("speedup_vs_bf16", "x", "higher", "time in bf16 / time in this precision"),
    MetricDef("rel_error_vs_fp32", "ratio", "lower", "||out - ref|| / ||ref|| against an fp32 reference"),
    MetricDef("gemm_only_ms", "ms", "lower",
              "the pass's GEMMs alone on operands already in fp8 (torch._scaled_mm, no casts or scaling)"),
    MetricDef("gemm_only_speedup_vs_bf16", "x", "higher",
              "the pass's GEMMs alone: bf16 time / fp8 time (the ceiling of any fp8 implementation's speedup)"),
    MetricDef("burst_tflops", "TFLOP/s", "higher",
              "the best TFLOP/s of a short (~20 ms) timing in a shape search: a burst, not a sustained rate"),
    MetricDef("roofline_ms", "ms", "neither", "the roofline bound time for this case"),
    MetricDef("predicted_speedup_vs_bf16", "x", "neither",
              "roofline time in bf16 / roofline time of this impl (casts and launches included)"),
    MetricDef("last_vs_first_tflops", "ratio", "higher",
              "sustained load: TFLOP/s of the last interval / of the first (below 1: throttled)"),
    MetricDef("tb_per_s", "TB/s", "higher", "device memory bandwidth, bytes read + bytes written", family=OP_RATE),
    MetricDef("gb_per_s", "GB/s", "higher",
              "transfer bandwidth (host<->device: bytes moved; host copy: read + written)", family=OP_RATE),
    MetricDef("time_ms", "ms", "lower", "time of one iteration of the timed work", family=OP_RATE),
    MetricDef("algbw_gbps", "GB/s", "higher",
              "collective algorithm bandwidth: the message size S as nccl-tests defines it per op / time",
              family=OP_RATE),
    MetricDef("busbw_gbps", "GB/s", "higher",
              "collective bus bandwidth (nccl-tests): algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather, "
              "reduce-scatter and all-to-all", family=OP_RATE),
    MetricDef("share_of_interconnect", "ratio", "higher",
              "median bus bandwidth / the interconnect's per-direction spec (active NVLink links x per-link figure)"),
    # monitors
    MetricDef("energy_j", "J", "lower", "NVML energy over the timed window", per_batch=True, additive=True),
    MetricDef("avg_power_w", "W", "neither", "average board power over the timed window"),
    MetricDef("sm_clock_mhz", "MHz", "neither", "SM clock sampled during the timed window"),
    MetricDef("gpu_util_pct", "%", "neither", "GPU utilisation sampled during the timed window"),
    MetricDef("max_temp_c", "°C", "neither", "highest GPU temperature sampled during the run (NVML)"),
    MetricDef("device_memory_used_gib", "GiB", "lower", "device memory in use (NVML), peak of the samples",
              per_batch=True),
    MetricDef("peak_reserved_gib", "GiB", "lower", "peak memory reserved by torch's caching allocator", per_batch=True),
]

METRICS: dict[str, MetricDef] = {m.name: m for m in _DEFS}


def metric(name: str) -> MetricDef:
    """The definition of a public metric; unknown names are a programming error."""
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"metric {name!r} is not in llmbench.metrics; add it there first") from None
