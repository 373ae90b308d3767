"""Case identity: the id (a stable hash of a case's scenario and params, never of the machine, so the
same case measured on two GPUs, or published in a paper, joins for comparison) and the label people
read. A light module on purpose: result-set tools use it without importing the runner."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from pydantic import BaseModel, model_serializer

from llmbench.redact import machine_paths

# A name that becomes part of a file or folder name (a suite's, serve-bench's --name and --gpu): one
# path component that cannot climb out of its folder, hide as a dotfile or exceed a file name's length.
NAME_MAX = 100
PATH_NAME_FORM = f"letters, digits, '-', '_' and '.' (not first), at most {NAME_MAX} characters"


def name_problem(name: object) -> str | None:
    """Why `name` cannot become part of a path llmbench writes (PATH_NAME_FORM): None if it can."""
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        return "must be letters, digits, '-', '_' or '.'"
    if not name.isascii():
        return "must be ASCII letters, digits, '-', '_' or '.'"
    if name.startswith("."):
        return "must not start with '.'"
    if len(name) > NAME_MAX:
        return f"must be at most {NAME_MAX} characters, not {len(name)}"
    return None


def is_path_name(name: object) -> bool:
    """Whether `name` may become part of a path llmbench writes (PATH_NAME_FORM)."""
    return name_problem(name) is None


class AddedLater(BaseModel):
    """A part of a case (scenario params, engine options) whose fields added after result sets were
    published name themselves in `added_later`: each is left out of the dump (and so of the case id)
    while it holds its default, so the cases measured before it existed keep their ids."""

    added_later: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_added_defaults(self, handler: Any) -> Any:
        data = handler(self)
        fields = type(self).model_fields
        for name in self.added_later if isinstance(data, dict) else ():
            if name in data and getattr(self, name) == fields[name].default:
                del data[name]
        return data


def case_id(scenario: str, params: dict[str, Any]) -> str:
    """The case's id: a hash of its scenario and params as a result set writes them (no path of the
    machine: `redact.machine_paths`), so a set's stored params give back its ids on any machine."""
    blob = machine_paths(json.dumps({"scenario": scenario, "params": params}, sort_keys=True, default=str))
    return f"{scenario}/{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"


def fmt_param(value: Any) -> str:
    """A param as people write it: shapes as 4096x4096x4096."""
    if isinstance(value, (list, tuple)):
        return "x".join(str(v) for v in value)
    return str(value)


def params_text(params: dict[str, Any], keys: list[str] | None = None) -> str:
    """'precision=bf16 shape=4096x4096x4096' (unset params left out)."""
    keys = list(params) if keys is None else keys
    return " ".join(f"{k}={fmt_param(params[k])}" for k in keys if params.get(k) is not None)
