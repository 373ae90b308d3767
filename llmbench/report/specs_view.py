"""`llmbench specs`: the GPU spec table, every figure with its source."""

from __future__ import annotations

from llmbench.hardware.specs import PRECISIONS, SPECS, GpuSpec
from llmbench.report.tables import MISSING, Table, fmt_num

SPECS_CAPTION = (
    "Dense peak TFLOP/s (int8: TOPS), no sparsity; fp64 without FP64 tensor cores. Vendor datasheet "
    "figures are ceilings, not measurements: run the `ceilings` suite for what a GPU really does."
)


def specs_table(specs: list[GpuSpec] | None = None) -> Table:
    rows = []
    for s in specs if specs is not None else SPECS:
        peaks = [fmt_num(s.tflops[p]) if p in s.tflops else MISSING for p in PRECISIONS]
        rows.append(
            [
                s.slug,
                s.name,
                f"{s.cc[0]}.{s.cc[1]}",
                fmt_num(s.memory_gib),
                fmt_num(s.bandwidth_tb_s),
                *peaks,
                fmt_num(s.tdp_w),
            ]
        )
    return Table(
        "GPU specs",
        ["slug", "name", "cc", "memory GB", "TB/s", *PRECISIONS, "TDP W"],
        rows,
        caption=SPECS_CAPTION,
        key_columns=2,
    )


def sources_table(specs: list[GpuSpec] | None = None) -> Table:
    rows = [
        [
            s.slug,
            s.source,
            s.notes or MISSING,
            ", ".join(f"{k}={fmt_num(v)}" for k, v in s.extra.items()) or MISSING,
        ]
        for s in (specs if specs is not None else SPECS)
    ]
    return Table("Sources", ["slug", "source", "notes", "extra"], rows)


def specs_tables(specs: list[GpuSpec] | None = None) -> list[Table]:
    return [specs_table(specs), sources_table(specs)]
