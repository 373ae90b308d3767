""""At the SLO" (analysis/at_slo.py) as a table, and as an answer block of the published pages: per SLO,
precision, engine and workload, each GPU's capacity, output tokens/s per GPU and $ per 1M output tokens,
"not known" where a GPU has no capacity case of the row. Renders only."""

from __future__ import annotations

from collections.abc import Callable

from llmbench.analysis.at_slo import BASIS_HIGHEST, BASIS_NONE_MET, Interval, SloAnswer, SloCell, SloKey
from llmbench.analysis.labels import gpu_display_name
from llmbench.report.firstscreen import AnswerBlock
from llmbench.report.tables import MISSING, Table, fmt_num

TITLE = "At the SLO: output tokens/s per GPU and $ per 1M output tokens"
NOT_KNOWN = "not known"
CLIENT_LATE = "(client late)"
KEY_COLUMNS = ["SLO", "precision", "engine", "workload"]
CAPTION = (
    "capacity: the search's answer, the median of its refinements' highest loads that met every limit, "
    "[its order-statistic interval] and the coverage that interval achieves (3 refinements: [min, max] at 75%). "
    "tok/s per GPU: the output tokens/s per GPU of each refinement's boundary point (the highest load it found "
    "to meet the SLO), their median [the same interval over them, the same coverage]; one marked * is the "
    "figure of the highest point that met the SLO, with no interval (the case records one refinement, or no "
    "curve). $/Mtok = USD per GPU-hour / (tok/s per GPU x 3600) x 1e6, at the price named above for that GPU, "
    "the interval mapped through it. {not_known}: that GPU has no capacity case of the row (`llmbench "
    "serve-bench --slo ... --search concurrency` measures it). engine url: a server already running at a URL; "
    "url vllm, url sglang: one whose model card named its owner (`info.served_by`). "
    f"{CLIENT_LATE}: the client flagged itself (late sends, short of CPU) at points near the search's boundary, "
    "so the capacity may be the client's (`llmbench show` names the points; `--client-procs` drives more)."
)


def _num(v: float) -> str:
    """A whole load as a whole number (concurrency 76), anything else as fmt_num writes it."""
    return f"{v:.0f}" if v == int(v) and abs(v) < 1000 else fmt_num(v)


def _interval(iv: Interval | None, fmt: Callable[[float], str] = _num) -> str:
    return f" [{fmt(iv.lo)}, {fmt(iv.hi)}] {iv.level:.0%}" if iv else ""


def _usd(v: float) -> str:
    return f"${v:,.2f}" if v >= 0.995 else f"${v:.3g}"


def capacity_text(c: SloCell, axis: str) -> str:
    """'concurrency 76 [76, 78] 75%', 'rate 12.5 req/s [...]': the axis, and the unit where it is not a count."""
    unit = "" if c.capacity_unit == "requests" else f" {c.capacity_unit}"
    text = f"{axis} {_num(c.capacity)}{unit}{_interval(c.capacity_interval)}"
    return text + (" (bound)" if c.bound else "") + (f" {CLIENT_LATE}" if c.client_late else "")


def tokens_text(c: SloCell) -> str:
    if c.tokens_per_s_per_gpu is None:
        return BASIS_NONE_MET
    star = "*" if c.basis == BASIS_HIGHEST else ""
    return f"{'at least ' if c.bound else ''}{fmt_num(c.tokens_per_s_per_gpu)}{star}{_interval(c.interval, fmt_num)}"


def usd_text(c: SloCell) -> str:
    if c.usd_per_mtok is None:
        return "no price" if c.tokens_per_s_per_gpu else MISSING
    span = c.usd_interval
    at_most = "at most " if c.bound else ""
    level = f" {c.interval.level:.0%}" if c.interval else ""
    return f"{at_most}{_usd(c.usd_per_mtok)}" + (f" [{_usd(span[0])}, {_usd(span[1])}]{level}" if span else "")


def slo_label(key: SloKey) -> str:
    limits = ", ".join(f"{name} {ms:g} ms" for name, ms in key.limits_ms)
    return f"{key.slo} ({limits})" if limits and key.slo != limits else key.slo


def workload_label(key: SloKey) -> str:
    gpus = f", {key.gpus_per_case} GPUs a server" if key.gpus_per_case != 1 else ""
    return f"{key.workload}, {key.axis} search{gpus}"


def price_notes(ans: SloAnswer) -> list[str]:
    """Each GPU's price with where it came from, once; the GPUs without one."""
    notes, unpriced = [], []
    for i, gpu in enumerate(ans.gpus):
        cell = next((r.cells[i] for r in ans.rows if r.cells[i] is not None and r.cells[i].price), None)  # type: ignore[union-attr]
        measured = any(r.cells[i] is not None for r in ans.rows)
        if cell is not None and cell.price is not None:
            notes.append(f"{gpu_display_name(gpu)}: ${cell.price.usd_per_hour:g} per GPU-hour ({cell.price_from}: "
                         f"{cell.price.origin()})")
        elif measured:
            unpriced.append(gpu)
    if unpriced:
        notes.append(f"no price for {', '.join(unpriced)}: give --price SLUG=USD")
    return notes


def slo_table(ans: SloAnswer) -> Table:
    """The section `compare` prints and the pages show."""
    names = [gpu_display_name(g) for g in ans.gpus]
    cols = [*KEY_COLUMNS, *(f"{n} {what}" for n in names for what in ("capacity", "tok/s per GPU", "$/Mtok"))]
    rows = []
    for r in ans.rows:
        cells: list[str] = []
        for c in r.cells:
            cells += [NOT_KNOWN] * 3 if c is None else [capacity_text(c, r.key.axis), tokens_text(c), usd_text(c)]
        rows.append([slo_label(r.key), r.key.precision, r.key.engine, workload_label(r.key), *cells])
    return Table(TITLE, cols, rows, caption=CAPTION.format(not_known=NOT_KNOWN), notes=price_notes(ans),
                 key_columns=len(KEY_COLUMNS))


def slo_block(ans: SloAnswer) -> AnswerBlock:
    """The published pages' answer block: what a GPU serves within an SLO and what a token costs there."""
    measured = [gpu_display_name(g) for i, g in enumerate(ans.gpus) if any(r.cells[i] for r in ans.rows)]
    lead = ("The load a GPU serves within each SLO's latency limits, the output tokens/s per GPU it delivers "
            f"there and what a million of them cost; measured on {', '.join(measured)}, '{NOT_KNOWN}' elsewhere.")
    table = slo_table(ans)
    return AnswerBlock("At the SLO", lead, [Table("By SLO and precision", table.columns, table.rows,
                                                  key_columns=table.key_columns)],
                       caption=table.caption, notes=table.notes)
