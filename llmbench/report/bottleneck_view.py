"""The bottleneck sweep as a table (the sweeps: analysis/bottleneck.py)."""

from __future__ import annotations

from llmbench.analysis.bottleneck import sweeps
from llmbench.analysis.inputs import SetRef
from llmbench.report.tables import MISSING, Table, fmt_num


def _point_text(p: tuple[int, float, float | None]) -> str:
    b, speed, busy = p
    return f"{b}: {fmt_num(speed)}/s" + ("" if busy is None else f", busy {busy:.2f}")


def bottleneck_table(ref: SetRef) -> Table | None:
    """Where a small batch stops being CPU-bound, per sweep; None where the set has no batch sweep."""
    found = sweeps(ref.cases())
    if not found:
        return None
    rows = [[s.label or "all cases", MISSING if s.batch is None else str(s.batch),
             "not reached in the sweep; " + s.rule if s.batch is None else s.rule,
             "; ".join(map(_point_text, s.points))] for s in found]
    return Table(
        f"{ref.label}: batch from which the GPU, not the host, bounds training",
        ["sweep", "bottleneck batch", "rule", "points (batch: samples/s, GPU busy fraction)"],
        rows,
        caption="busy: gpu_busy_fraction, the profiler's kernel time over wall time (launch gaps idle). "
        "A sweep without it (a CPU run, or cases recorded before it was measured so) is read by how "
        "samples/s scales with the batch instead.",
    )
