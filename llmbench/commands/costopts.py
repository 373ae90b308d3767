"""The price options `compare`, `report`, `versus` and `fleet` share."""

from __future__ import annotations

import typer

from llmbench.api import DEFAULT_RUN_TOKENS

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

