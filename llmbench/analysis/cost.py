"""What a measured rate costs at an hourly price, and the price at which a faster GPU stops paying.

No price is built in: every figure here is arithmetic on a rate from a result set and a price the
user gave (`--price SLUG=USD`, `--prices FILE.toml`). Rates are per second, prices per hour.
"""

from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0
# A fine-tuning run is priced as this many training tokens unless --run-tokens says otherwise: about
# three epochs over a 33M-token instruction set (a round, stated figure, not a measurement).
DEFAULT_RUN_TOKENS = 100_000_000


@dataclass(frozen=True)
class CostUnit:
    """A unit of work priced from one rate metric: `amount` units of that metric's numerator."""

    metric: str  # the rate metric (per second) the cost is computed from
    label: str  # what one priced unit is
    amount: float  # how many of the metric's units make one priced unit


def cost_units(run_tokens: float = DEFAULT_RUN_TOKENS) -> list[CostUnit]:
    """The units a comparison is priced in: output tokens, training samples, a fine-tuning run."""
    return [
        CostUnit("output_tokens_per_s", "$ per 1M output tokens", 1e6),
        CostUnit("train_samples_per_s", "$ per training sample", 1.0),
        CostUnit("train_tokens_per_s", f"$ per fine-tuning run ({run_tokens:,.0f} training tokens)", run_tokens),
    ]


def cost_per(usd_per_hour: float, rate_per_s: float, amount: float = 1.0) -> float:
    """Dollars for `amount` units of work done at `rate_per_s` on a machine rented at `usd_per_hour`."""
    if rate_per_s <= 0:
        raise ValueError("a cost needs a positive rate")
    return usd_per_hour * amount / (rate_per_s * SECONDS_PER_HOUR)


def break_even_price(base_usd_per_hour: float, base_rate: float, rate: float) -> float:
    """The hourly price at which a machine doing `rate` costs per unit what the baseline does at its
    price and `base_rate`: below it the candidate is cheaper per unit, above it dearer. (For a faster
    GPU: the rent at which its speed stops paying.)"""
    if base_rate <= 0 or rate <= 0:
        raise ValueError("a break-even price needs positive rates")
    return base_usd_per_hour * rate / base_rate
