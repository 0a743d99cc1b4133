"""Budgets on what an LLM-backed target's writes may cost: ``max_llm_calls_per_run`` (LLM and
embedding calls, every attempt, in one run) and ``max_llm_tokens_per_day`` (prompt plus
completion tokens the endpoint reports, per UTC day).

The counting hook (:mod:`healthd.memory._llm_count`) asks :meth:`LLMBudget.admit` before each
call a write sends and the call is refused (:class:`LLMBudgetExceeded`) when it would exceed
the calls budget, or when the day's tokens have already reached the tokens budget (a call's
tokens are known only from its answer, so the last call admitted may carry the day over by
its own tokens). The reads that score a stage are counted against both, never refused: a
stage is scored whole or not at all.

Pure: no I/O, no clock; the runner says which day it is.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from healthd.errors import MemoryAdapterError, TargetError

CALLS = "max_llm_calls_per_run"
TOKENS = "max_llm_tokens_per_day"
KEYS = (CALLS, TOKENS)


class LLMBudgetExceeded(MemoryAdapterError):
    """A call was refused by a budget: the run stops before it, what was replayed stands."""

    def __init__(
        self, budget: str, limit: int, used: int, before: str = "the call that would exceed it"
    ) -> None:
        self.budget = budget
        what = "calls this run" if budget == CALLS else "tokens today (UTC)"
        super().__init__(
            f"LLM budget {budget} reached: {used} {what}, of {limit}: stopped before {before}"
        )


def budget_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, int]]:
    """A target's options without the budget keys, and the budgets given (positive
    integers; TargetError naming the key otherwise)."""
    rest = {k: v for k, v in options.items() if k not in KEYS}
    budgets: dict[str, int] = {}
    for key in KEYS:
        if key not in options:
            continue
        value = options[key]
        try:
            number = int(str(value))
        except ValueError:
            number = 0
        if isinstance(value, bool) or number < 1:
            raise TargetError(f"{key} must be a whole number of at least 1, not {value!r}")
        budgets[key] = number
    return rest, budgets


class LLMBudget:
    """One target's budgets and what its calls have used of them."""

    def __init__(self, max_calls_per_run: int | None, max_tokens_per_day: int | None) -> None:
        self._lock = threading.Lock()
        self.max_calls = max_calls_per_run
        self.max_tokens = max_tokens_per_day
        self.calls = 0  # this run's
        self.day: str | None = None
        self.tokens = 0  # this day's
        self.refused: LLMBudgetExceeded | None = None

    def begin_run(self, day: str, stored: Mapping[str, Any] | None = None) -> None:
        """A run starts on ``day`` (``YYYY-MM-DD``, UTC): the calls budget is fresh, the
        day's tokens carried on from ``stored`` (the state file's) when it is the same day."""
        with self._lock:
            self.calls = 0
            self.refused = None
            if stored and self.day is None and stored.get("day") == day:
                self.day, self.tokens = day, int(stored.get("tokens") or 0)
            if self.day != day:
                self.day, self.tokens = day, 0

    def admit(self, write: bool) -> None:
        """Count a call about to be sent; refuse it (raise) when it is a write's and would
        exceed a budget. Once one is refused every later write call of the run is too."""
        with self._lock:
            if write:
                if self.max_calls is not None and self.calls + 1 > self.max_calls:
                    self.refused = LLMBudgetExceeded(CALLS, self.max_calls, self.calls)
                elif self.max_tokens is not None and self.tokens >= self.max_tokens:
                    self.refused = LLMBudgetExceeded(TOKENS, self.max_tokens, self.tokens)
                if self.refused is not None:
                    raise self.refused
            self.calls += 1

    def admit_turn(self, calls: int) -> None:
        """A write about to make up to ``calls`` calls that healthd learns of only once they
        are made (a Letta agent's turn, its steps reported with its answer): refused (raised)
        when that many could exceed the calls budget, or the day's tokens are reached. The
        calls are counted afterwards, as made (:meth:`admit` with ``write=False``)."""
        with self._lock:
            before = f"an agent turn of up to {calls} calls that could exceed it"
            if self.refused is None:
                if self.max_calls is not None and self.calls + calls > self.max_calls:
                    self.refused = LLMBudgetExceeded(CALLS, self.max_calls, self.calls, before)
                elif self.max_tokens is not None and self.tokens >= self.max_tokens:
                    self.refused = LLMBudgetExceeded(TOKENS, self.max_tokens, self.tokens, before)
            if self.refused is not None:
                raise self.refused

    def spent(self, tokens: int) -> None:
        with self._lock:
            self.tokens += tokens

    def take_refusal(self) -> LLMBudgetExceeded | None:
        with self._lock:
            refused, self.refused = self.refused, None
            return refused

    def stored(self) -> dict[str, Any]:
        """What the state file keeps: the day and its tokens."""
        with self._lock:
            return {"day": self.day, "tokens": self.tokens}

    def remaining(self) -> dict[str, int]:
        """What is left, by budget: calls this run, tokens today."""
        with self._lock:
            out: dict[str, int] = {}
            if self.max_calls is not None:
                out[CALLS] = max(0, self.max_calls - self.calls)
            if self.max_tokens is not None:
                out[TOKENS] = max(0, self.max_tokens - self.tokens)
            return out
