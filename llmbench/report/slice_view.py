"""A MIG slice against its share of the full GPU, as a table (the figures: analysis/migslice.py)."""

from __future__ import annotations

from llmbench.analysis.compare import Comparison
from llmbench.analysis.migslice import BOUNDS, SliceRow, slice_rows
from llmbench.hardware import mig
from llmbench.report.tables import MISSING, Table, fmt_num


def _share_text(r: SliceRow) -> str:
    g, gb = mig.PROFILE.fullmatch(r.profile).groups()  # type: ignore[union-attr]
    return (f"{r.share['compute']:.2f} ({g}/{r.compute_slices}) / "
            f"{r.share['memory']:.2f} ({gb}/{r.memory_gb:g} GB)")


def slice_table(cmp: Comparison, notes: list[str] | None = None) -> Table | None:
    """The table of `slice_rows`; None where no set is a MIG slice of a full-GPU set's model."""
    rows = slice_rows(cmp)
    if not rows:
        return None
    sets = cmp.sets
    body = []
    for r in rows:
        vs = r.vs_expected
        body.append([
            r.case, f"{r.metric} ({r.unit})",
            fmt_num(r.full_value),
            _share_text(r),
            " / ".join(fmt_num(r.expected[b]) for b in BOUNDS),
            fmt_num(r.measured),
            " / ".join(MISSING if b not in vs else f"{vs[b]:.2f}x" for b in BOUNDS),
            f"{r.side_by_side} x {fmt_num(r.measured)} = {fmt_num(r.together)}",
            f"{r.together / r.full_value:.2f}x",
        ])
    full_labels = ", ".join(dict.fromkeys(sets[r.full].label for r in rows))
    part_labels = ", ".join(dict.fromkeys(sets[r.part].label for r in rows))
    return Table(
        "MIG slice against its share of the full GPU",
        ["case", "metric", "full GPU", "share (compute / memory)", "expected (compute / memory)",
         "slice", "slice / expected", "slices side by side", "vs full"],
        body,
        caption=f"full GPU: {full_labels}; slice: {part_labels}. A MIG profile <g>g.<m>gb holds g of the "
        "GPU's compute slices (7; 4 on an A30) and m GB of its memory (the datasheet's GB). "
        "expected = the full GPU's figure x the slice's share of the "
        "resource that binds it (memory standing in for bandwidth): an expectation, not a measurement; "
        "slice / expected > 1: the slice does better than its share. 'slices side by side' = the "
        "slices of that profile that fit the GPU at once (compute slices / g, no more than its memory "
        "holds) x the slice's figure, assuming they do not slow one another; against the full GPU's "
        "figure, > 1: splitting the GPU gives more in all.",
        notes=notes or [],
    )
