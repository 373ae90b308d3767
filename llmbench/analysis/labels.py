"""How a result set is named and labelled wherever it is shown: published and projected figures are
never shown without saying so."""

from __future__ import annotations

from llmbench.hardware.specs import lookup
from llmbench.results import ResultSet

NOT_MEASURED = ("published", "projected")


def kind(rs: ResultSet) -> str:
    return rs.source.kind


def is_measured(rs: ResultSet) -> bool:
    return rs.source.kind not in NOT_MEASURED


def tag(rs: ResultSet) -> str:
    """'' for measured sets, ' [published]' or ' [projected]' otherwise: appended to every name."""
    return "" if is_measured(rs) else f" [{rs.source.kind}]"


def source_line(rs: ResultSet) -> str:
    """One line saying where the figures come from."""
    src = rs.source
    if src.kind == "measured":
        return "measured"
    parts: list[str] = [] if (src.citation or "").lower().startswith(src.kind) else [src.kind]
    if src.citation:
        parts.append(src.citation)
    if src.url:
        parts.append(src.url)
    if src.note:
        parts.append(src.note)
    return ": ".join(parts[:2]) + ("; " + "; ".join(parts[2:]) if len(parts) > 2 else "")


def mixing_warning(sets: list[ResultSet]) -> str | None:
    """A sentence for every output that puts measured and non-measured figures side by side."""
    kinds = sorted({rs.source.kind for rs in sets})
    if len(kinds) < 2 and kinds != ["projected"] and kinds != ["published"]:
        return None
    named = ", ".join(f"{rs.gpu_slug}{tag(rs)}" for rs in sets if not is_measured(rs))
    return (
        f"Not all figures here are measured: {named}. Published figures come from the cited source "
        "(other software, settings and workloads); projected figures are estimates from spec-sheet ratios."
    )


def gpu_name(rs: ResultSet) -> str:
    """The GPU of a result set as a person names it (`gpu_display_name`)."""
    return gpu_display_name(rs.gpu_slug, (rs.env.get("gpu") or {}).get("name"))


MIG_MARK = "-mig-"  # a MIG slice's slug: its GPU's slug, this, the profile ('a100-pcie-40gb-mig-3g.20gb')


def gpu_display_name(slug: str, reported: str | None = None) -> str:
    """A GPU as a person names it: the spec table's name ('H100 SXM5 80GB'; a MIG slice's as its GPU's
    and profile, 'A100 PCIe 40GB MIG 3g.20gb'), else the name the driver reported, else the slug;
    'CPU x86_64' for a run on the CPU. The slug stays the key everywhere else."""
    if slug.startswith("cpu-"):
        return f"CPU {slug.removeprefix('cpu-')}"
    gpu, mig, profile = slug.partition(MIG_MARK)
    spec = lookup(gpu)
    name = (spec.name if spec else str(reported or slug)).removeprefix("NVIDIA ")
    return name + (f" MIG {profile}" if mig and spec else "")
