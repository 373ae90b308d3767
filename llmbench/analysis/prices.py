"""Hourly prices: the user's (`--price SLUG=USD`, repeatable, and a prices TOML file they keep) and the
public list prices shipped with llmbench (references/data/prices.json, their one home: `list_prices`).

The file has one table per GPU slug; `usd_per_hour` is required, `provider`, `source` and `checked`
and `offer` (on-demand, serverless, ...) say where the figure came from and when (shown beside the cost table), e.g.

    [h100-sxm-80gb]
    usd_per_hour = 2.49
    provider = "..."
    source = "https://..."
    checked = "2026-05-07"
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from llmbench.errors import UserError, choices_hint
from llmbench.hardware.specs import lookup
from llmbench.references import price_rows

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEXT_KEYS = ("provider", "offer", "source", "checked", "note")


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    provider: str = ""
    offer: str = ""  # the offer class (on-demand, serverless, spot, reserved): prices compare like for like
    source: str = ""
    checked: str = ""
    note: str = ""

    def origin(self) -> str:
        """Where the figure came from, in a few words ('given on the command line' without a file)."""
        checked = f"checked {self.checked}" if self.checked else ""
        parts = [p for p in (self.provider, self.offer, self.source, checked, self.note) if p]
        return ", ".join(parts) or "given on the command line"


def _amount(text: object, what: str) -> float:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UserError(f"{what}: {text!r} is not a price in USD per hour (e.g. 2.49)") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{what}: {text!r} must be a positive price in USD per hour")
    return value


def parse_price(text: str) -> tuple[str, Price]:
    """'h100-sxm-80gb=2.49' -> (slug, Price)."""
    slug, sep, usd = text.partition("=")
    if not sep or not slug.strip():
        raise UserError(f"--price {text!r}: expected GPU-SLUG=USD_PER_HOUR, e.g. --price h100-sxm-80gb=2.49")
    return slug.strip(), Price(_amount(usd.strip().lstrip("$"), f"--price {text!r}"))


def load_prices(path: Path) -> dict[str, Price]:
    """Read a prices TOML file (see the module docstring); bad content is a UserError naming the file."""
    if not path.is_file():
        raise UserError(f"--prices {str(path)!r}: no such file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"--prices {str(path)!r}: not valid TOML: {e}") from None
    out: dict[str, Price] = {}
    for slug, entry in data.items():
        where = f"{path}: [{slug}]"
        if not isinstance(entry, dict):
            raise UserError(f"{where}: expected a table with usd_per_hour (got {entry!r})")
        unknown = sorted(set(entry) - {"usd_per_hour", *TEXT_KEYS})
        if unknown:
            hint = choices_hint(unknown[0], ["usd_per_hour", *TEXT_KEYS])
            raise UserError(f"{where}: unknown key {unknown[0]!r}; {hint}")
        if "usd_per_hour" not in entry:
            raise UserError(f"{where}: usd_per_hour is missing")
        texts = {k: str(entry[k]) for k in TEXT_KEYS if k in entry}
        out[slug] = Price(_amount(entry["usd_per_hour"], f"{where} usd_per_hour"), **texts)
    return out


def resolve_prices(given: list[str], file: Path | None, slugs: list[str]) -> dict[str, Price]:
    """The prices of the GPUs in `slugs`: the file's, then --price ones over them. A --price naming a
    slug none of the result sets has is an error (a typo would otherwise price nothing); a file may
    hold prices of other GPUs too."""
    prices = {k: v for k, v in (load_prices(file) if file else {}).items() if k in slugs}
    for text in given:
        slug, price = parse_price(text)
        if slug not in slugs:
            hint = choices_hint(None if lookup(slug) else slug, sorted(set(slugs)))  # a GPU of no set: no guess
            raise UserError(f"--price {text!r}: no result set is of GPU {slug!r}; {hint}")
        prices[slug] = price
    return prices


def list_prices() -> list[tuple[str, Price]]:
    """The shipped list prices in the data's order: each GPU slug with its price, provider, offer class and date."""
    return [(r["gpu"], Price(**{k: v for k, v in r.items() if k != "gpu"})) for r in price_rows()]


def first_list_prices() -> dict[str, Price]:
    """Each GPU's first list price: the published pages' cost tables. Two GPUs' prices may differ in provider,
    offer class and date; the table's notes name each price's origin."""
    out: dict[str, Price] = {}
    for gpu, price in list_prices():
        out.setdefault(gpu, price)
    return out
