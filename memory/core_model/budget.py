"""The core model's tokens: counted by purpose, and capped per UTC day.

Every core-model call (a distillation, the LLM gate's yes/no question) goes through a
`BudgetedCoreModel`, which adds the `usage` the server reports to one shared
`CoreBudget`. With `core_model_daily_tokens` set, a call once today's tokens reach it is
refused with `CoreModelCapped` before anything is sent, and its caller falls back to its
rule-based twin until the UTC day ends. The call that crosses the cap still completes
(its size is only known from its answer), as do calls already under way.

The count lives in this process: a restart starts the day's count from zero.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Any, Literal

from mnemoproxy.errors import CoreModelCapped
from mnemoproxy.memory.core_model.client import Completion, CoreModel

log = logging.getLogger(__name__)

# What a core-model call is for: the tokens and the refusals are counted per purpose.
Purpose = Literal["distill", "relevance_gate"]
PURPOSES: tuple[Purpose, ...] = ("distill", "relevance_gate")


def _utc_now() -> datetime:
    return datetime.now(UTC)


class CoreBudget:
    """`daily_tokens` 0 counts without a cap. Used from one event loop: no lock."""

    def __init__(self, daily_tokens: int, *, clock: Callable[[], datetime] = _utc_now) -> None:
        self.daily_tokens = daily_tokens
        self._clock = clock
        self._day: date = clock().date()
        self._today = 0
        # Since start-up: (purpose, "prompt" | "completion") -> tokens, purpose -> calls
        # refused because of the cap.
        self.tokens: Counter[tuple[str, str]] = Counter()
        self.refused: Counter[str] = Counter()

    @property
    def tokens_today(self) -> int:
        today = self._clock().date()
        if today != self._day:
            self._day, self._today = today, 0
        return self._today

    @property
    def capped(self) -> bool:
        """Whether today's tokens have reached the cap: core-model calls are refused."""
        return self.daily_tokens > 0 and self.tokens_today >= self.daily_tokens

    def check(self, purpose: Purpose) -> None:
        """Raise CoreModelCapped when a call for `purpose` may not go out now."""
        if self.capped:
            self.refused[purpose] += 1
            raise CoreModelCapped(
                f"the core model has used {self.tokens_today} tokens today (UTC), "
                f"core_model_daily_tokens is {self.daily_tokens}",
                param="core_model_daily_tokens",
            )

    def spend(self, purpose: Purpose, completion: Completion) -> None:
        was_capped = self.capped
        self.tokens[(purpose, "prompt")] += completion.prompt_tokens
        self.tokens[(purpose, "completion")] += completion.completion_tokens
        self._today += completion.prompt_tokens + completion.completion_tokens
        if self.capped and not was_capped:  # crossed once a day at most: one warning a day
            log.warning(
                "the core model has used %d tokens today (UTC), reaching "
                "core_model_daily_tokens=%d: until the day ends, sessions are distilled by "
                "the rule-based distiller and the relevance gate decides without the model",
                self._today, self.daily_tokens,
            )

    def status(self) -> dict[str, Any]:
        """As /health shows it (and /metrics exports it)."""
        return {
            "daily_tokens": self.daily_tokens,
            "tokens_today": self.tokens_today,
            "capped": self.capped,
            "tokens": {
                purpose: {part: self.tokens[(purpose, part)] for part in ("prompt", "completion")}
                for purpose in PURPOSES
            },
            "refused_calls": {purpose: self.refused[purpose] for purpose in PURPOSES},
        }


class BudgetedCoreModel:
    """A CoreModel that spends from `budget` for `purpose`: refused past the daily cap,
    its reported usage counted otherwise."""

    def __init__(self, core: CoreModel, budget: CoreBudget, purpose: Purpose) -> None:
        self._core = core
        self._budget = budget
        self.purpose = purpose

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        json_schema: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self._budget.check(self.purpose)
        completion = await self._core.complete(
            messages, json_schema=json_schema, timeout=timeout, max_tokens=max_tokens
        )
        self._budget.spend(self.purpose, completion)
        return completion
