"""What pages read by people call a GPU: its spec-table name ('H100 SXM5 80GB'), not its slug. The slug
stays the key everywhere else (file names, `--baseline`, case joins) and is shown in a report's details."""

from __future__ import annotations

from dataclasses import replace

from llmbench.analysis.inputs import SetRef
from llmbench.analysis.labels import gpu_display_name as gpu_name
from llmbench.analysis.labels import tag


def display_names(sets: list[SetRef]) -> list[SetRef]:
    """Copies of `sets` named by their GPU; where two of one kind (measured, published, projected) share
    a GPU name, by GPU and suite, and where that is shared too, by GPU and file stem. The originals keep
    their names (`--baseline`, Markdown)."""
    keys = [(gpu_name(s.rs.gpu_slug), s.kind) for s in sets]
    out: list[SetRef] = []
    for s, key in zip(sets, keys, strict=True):
        name = key[0]
        if keys.count(key) > 1:
            suites = [o.rs.suite for o, k in zip(sets, keys, strict=True) if k == key]
            name = f"{name} ({s.rs.suite if suites.count(s.rs.suite) == 1 else s.stem or s.name})"
        if any(o.label == name + tag(s.rs) for o in out):
            name = f"{name} #{len(out) + 1}"
        out.append(replace(s, name=name))
    return out
