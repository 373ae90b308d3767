"""What pages read by people call a GPU: its spec-table name ('H100 SXM5 80GB'), not its slug. The slug
stays the key everywhere else (file names, `--baseline`, case joins) and is shown in a report's details."""

from __future__ import annotations

from dataclasses import replace

from llmbench.hardware.specs import lookup
from llmbench.report.inputs import SetRef
from llmbench.report.labels import tag

VENDOR_PREFIX = "NVIDIA "
MIG_MARK = "-mig-"  # a MIG slice's slug: its GPU's slug, this, the profile ('a100-pcie-40gb-mig-3g.20gb')


def gpu_name(slug: str) -> str:
    """The spec table's name of the GPU without the vendor ('H100 SXM5 80GB'), a MIG slice's as its GPU's
    and profile ('A100 PCIe 40GB MIG 3g.20gb'); the slug itself where the table does not know the GPU."""
    gpu, mig, profile = slug.partition(MIG_MARK)
    spec = lookup(gpu)
    if spec is None:
        return slug
    return spec.name.removeprefix(VENDOR_PREFIX) + (f" MIG {profile}" if mig else "")


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
