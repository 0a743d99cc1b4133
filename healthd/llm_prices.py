"""The optional price table of ``[llm.prices]``: what the team's LLM and embedding endpoints
charge, per million tokens, turned into money by `healthd check-config --estimate`
(:mod:`healthd.estimate`)::

    [llm.prices]
    currency = "USD"       # default USD; every price in one currency
    prompt = 0.15          # chat prompt (input) tokens, per million
    completion = 0.60      # chat completion (output) tokens, per million
    embedding = 0.02       # embedding input tokens, per million

    [llm.prices.by_target.team-graphiti]   # a target whose endpoints charge otherwise
    prompt = 2.50
    completion = 10.0
    embedding = 0.13
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from healthd._numbers import RealNumber


class Prices(BaseModel):
    """What an endpoint charges, per million tokens, in ``currency``."""

    model_config = ConfigDict(extra="forbid")
    currency: str = Field("USD", min_length=1, max_length=12)
    prompt: RealNumber = Field(ge=0, allow_inf_nan=False)  # chat prompt (input) tokens
    completion: RealNumber = Field(ge=0, allow_inf_nan=False)  # chat completion (output) tokens
    embedding: RealNumber = Field(ge=0, allow_inf_nan=False)  # embedding input tokens


class PriceTable(Prices):
    """``[llm.prices]``, and ``[llm.prices.by_target.NAME]`` for a target whose endpoints
    charge otherwise."""

    by_target: dict[str, Prices] = Field(default_factory=dict)


class LLMConfig(BaseModel):
    """``[llm]``: for now only the optional price table the estimate turns into money."""

    model_config = ConfigDict(extra="forbid")
    prices: PriceTable | None = None

    @model_validator(mode="after")
    def _one_currency(self) -> LLMConfig:
        table = self.prices
        if table is not None:
            for name, prices in table.by_target.items():
                if prices.currency != table.currency:
                    raise ValueError(
                        f"prices.by_target.{name}.currency: {prices.currency!r} differs from "
                        f"prices.currency {table.currency!r}; give every price in one currency"
                    )
        return self

    def prices_for(self, target: str) -> Prices | None:
        if self.prices is None:
            return None
        return self.prices.by_target.get(target, self.prices)
