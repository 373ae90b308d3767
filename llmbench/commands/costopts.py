"""The price options `compare`, `report` and `fleet` share, and turning them into prices."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.analysis.cost import DEFAULT_RUN_TOKENS
from llmbench.analysis.inputs import SetRef
from llmbench.analysis.prices import Price
from llmbench.api import price_sets

PRICE_OPT = typer.Option(
    None, "--price", metavar="SLUG=USD",
    help="Hourly price of a GPU (its slug, as in the result sets), e.g. --price h100-sxm-80gb=2.49; repeatable. "
    "Adds cost per 1M output tokens, per training sample and per fine-tuning run, and break-even prices.",
)
PRICES_OPT = typer.Option(
    None, "--prices", metavar="FILE.toml",
    help="A prices file you keep (one \\[slug] table with usd_per_hour each: docs/usage.md, Prices); "
    "--price overrides it.",
)
RUN_TOKENS_OPT = typer.Option(
    DEFAULT_RUN_TOKENS, "--run-tokens", min=1,
    help="Training tokens of the fine-tuning run that is priced (from train_tokens_per_s).",
)


def prices_for(sets: list[SetRef], given: Optional[list[str]], file: Optional[Path]) -> dict[str, Price] | None:
    """The prices of the sets' GPUs, or None where no price option was used (no cost table)."""
    return price_sets(sets, given or [], file)
